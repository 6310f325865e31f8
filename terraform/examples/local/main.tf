# The same module against a local S3 emulator (moto's server), as the end-to-end test runs it.
provider "aws" {
  region = "us-east-1"

  # An emulator takes any keys; these are not secrets.
  access_key = "testing"
  secret_key = "testing"

  s3_use_path_style           = true
  skip_credentials_validation = true
  skip_requesting_account_id  = true
  skip_metadata_api_check     = true

  endpoints {
    s3  = var.endpoint
    sts = var.endpoint
  }
}

module "claims" {
  source = "../../"

  bucket        = var.bucket
  force_destroy = true
  endpoint_url  = var.endpoint

  # moto applies a Deny statement to every request, whatever its condition.
  attach_deny_insecure_transport_policy = false
  # moto drops the ObjectSizeGreaterThan that hashicorp/aws sends in every And filter, and the
  # provider waits for it to come back until it times out: filter the TTL rules by tag alone.
  ttl_rules_match_key_prefix = false
}
