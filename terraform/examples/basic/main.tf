# A claim bucket on AWS, with the least-privilege policy attached to the agents' role.
provider "aws" {
  region = var.region
}

module "claims" {
  source = "../../"

  bucket_prefix    = "s3claim-"
  agent_role_names = var.agent_role_names

  tags = {
    Project = "s3claim"
  }
}
