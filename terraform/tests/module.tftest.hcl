# Plan-and-apply checks of the module against a mocked AWS provider: no network, no credentials.
# Run with `terraform init && terraform test` in terraform/ (tests/test_terraform.py does).

mock_provider "aws" {
  mock_resource "aws_s3_bucket" {
    defaults = {
      id  = "claims-test"
      arn = "arn:aws:s3:::claims-test"
    }
  }

  mock_resource "aws_iam_policy" {
    defaults = {
      arn = "arn:aws:iam::111122223333:policy/s3claim-agent-test"
    }
  }

  mock_data "aws_region" {
    defaults = {
      name = "eu-west-1"
    }
  }
}

variables {
  bucket = "claims-test"
}

run "defaults" {
  assert {
    condition     = length(aws_s3_bucket_lifecycle_configuration.this.rule) == 4
    error_message = "Expected one rule per TTL class (1, 7, 30) plus the multipart-abort rule."
  }

  assert {
    condition = alltrue([
      for i, days in [1, 7, 30] :
      aws_s3_bucket_lifecycle_configuration.this.rule[i].id == "s3claim-ttl-${days}d" &&
      aws_s3_bucket_lifecycle_configuration.this.rule[i].status == "Enabled" &&
      aws_s3_bucket_lifecycle_configuration.this.rule[i].filter[0].and[0].prefix == "claims/" &&
      aws_s3_bucket_lifecycle_configuration.this.rule[i].filter[0].and[0].tags == tomap({ "s3claim-ttl-days" = tostring(days) }) &&
      length(aws_s3_bucket_lifecycle_configuration.this.rule[i].filter[0].tag) == 0 &&
      aws_s3_bucket_lifecycle_configuration.this.rule[i].expiration[0].days == days
    ])
    error_message = "Each TTL class N needs a rule filtered by prefix claims/ AND tag s3claim-ttl-days=N, expiring after N days."
  }

  assert {
    condition = (
      aws_s3_bucket_lifecycle_configuration.this.rule[3].abort_incomplete_multipart_upload[0].days_after_initiation == 1 &&
      length(aws_s3_bucket_lifecycle_configuration.this.rule[3].filter[0].and) == 0 &&
      length(aws_s3_bucket_lifecycle_configuration.this.rule[3].filter[0].tag) == 0 &&
      length(aws_s3_bucket_lifecycle_configuration.this.rule[3].expiration) == 0
    )
    error_message = "The multipart-abort rule must be bucket-wide, untagged, and abort after 1 day."
  }

  assert {
    condition     = one(aws_s3_bucket_server_side_encryption_configuration.this.rule).apply_server_side_encryption_by_default[0].sse_algorithm == "AES256"
    error_message = "Default encryption must be SSE-S3 (AES256) when no KMS key is given."
  }

  assert {
    condition     = one(aws_s3_bucket_server_side_encryption_configuration.this.rule).apply_server_side_encryption_by_default[0].kms_master_key_id == null
    error_message = "SSE-S3 must not name a KMS key."
  }

  assert {
    condition     = length(aws_s3_bucket_policy.this) == 1
    error_message = "The TLS-only bucket policy must be on by default."
  }

  assert {
    condition = jsondecode(aws_s3_bucket_policy.this[0].policy).Statement[0] == {
      Sid       = "DenyInsecureTransport"
      Effect    = "Deny"
      Principal = "*"
      Action    = "s3:*"
      Resource  = ["arn:aws:s3:::claims-test", "arn:aws:s3:::claims-test/*"]
      Condition = { Bool = { "aws:SecureTransport" = "false" } }
    }
    error_message = "The bucket policy must deny every request where aws:SecureTransport is false, on the bucket and its objects."
  }

  assert {
    condition = (
      aws_s3_bucket_public_access_block.this.block_public_acls &&
      aws_s3_bucket_public_access_block.this.block_public_policy &&
      aws_s3_bucket_public_access_block.this.ignore_public_acls &&
      aws_s3_bucket_public_access_block.this.restrict_public_buckets
    )
    error_message = "All four public access block settings must be on."
  }

  assert {
    condition     = aws_s3_bucket_ownership_controls.this.rule[0].object_ownership == "BucketOwnerEnforced"
    error_message = "Object ownership must be BucketOwnerEnforced (ACLs off)."
  }

  assert {
    condition     = length(aws_s3_bucket_versioning.this) == 0 && aws_s3_bucket.this.force_destroy == false
    error_message = "Versioning must stay off and force_destroy false by default."
  }

  assert {
    condition = output.store_env == tomap({
      S3CLAIM_BUCKET          = "claims-test"
      S3CLAIM_PREFIX          = "claims/"
      S3CLAIM_REGION          = "eu-west-1"
      S3CLAIM_SSE             = "AES256"
      S3CLAIM_TTL_DAY_CLASSES = "[1,7,30]"
    })
    error_message = "store_env must hold exactly bucket, prefix, region, SSE and the TTL classes (JSON) by default."
  }

  assert {
    condition = jsondecode(output.iam_policy_json).Statement == [
      {
        Sid      = "ClaimObjects"
        Effect   = "Allow"
        Action   = ["s3:DeleteObject", "s3:DeleteObjectVersion", "s3:GetObject", "s3:PutObject", "s3:PutObjectTagging"]
        Resource = ["arn:aws:s3:::claims-test/claims/*"]
      },
      {
        Sid      = "ListClaimBucket"
        Effect   = "Allow"
        Action   = ["s3:ListBucket"]
        Resource = ["arn:aws:s3:::claims-test"]
      },
      {
        Sid       = "ListClaimVersions"
        Effect    = "Allow"
        Action    = ["s3:ListBucketVersions"]
        Resource  = ["arn:aws:s3:::claims-test"]
        Condition = { StringLike = { "s3:prefix" = ["claims/*"] } }
      },
    ]
    error_message = "The agent policy must grant the store's object actions on the prefix and listing the bucket (for 404s) and its versions under the prefix only."
  }

  assert {
    condition     = length(aws_iam_policy.agent) == 0 && length(aws_iam_role_policy_attachment.agent) == 0
    error_message = "No IAM policy is created unless agent roles are named."
  }
}

run "kms" {
  variables {
    kms_key_arn = "arn:aws:kms:eu-west-1:111122223333:key/1234abcd-12ab-34cd-56ef-1234567890ab"
  }

  assert {
    condition = (
      one(aws_s3_bucket_server_side_encryption_configuration.this.rule).apply_server_side_encryption_by_default[0].sse_algorithm == "aws:kms" &&
      one(aws_s3_bucket_server_side_encryption_configuration.this.rule).apply_server_side_encryption_by_default[0].kms_master_key_id == var.kms_key_arn
    )
    error_message = "With kms_key_arn, default encryption must be SSE-KMS with that key."
  }

  assert {
    condition     = one(aws_s3_bucket_server_side_encryption_configuration.this.rule).bucket_key_enabled == true
    error_message = "SSE-KMS must use an S3 bucket key."
  }

  assert {
    condition     = output.store_env["S3CLAIM_SSE"] == "aws:kms" && output.store_env["S3CLAIM_KMS_KEY_ID"] == var.kms_key_arn
    error_message = "store_env must tell the store to write with aws:kms and the key."
  }

  assert {
    condition = contains(jsondecode(output.iam_policy_json).Statement, {
      Sid       = "ClaimKey"
      Effect    = "Allow"
      Action    = ["kms:Decrypt", "kms:GenerateDataKey"]
      Resource  = [var.kms_key_arn]
      Condition = { StringEquals = { "kms:ViaService" = "s3.eu-west-1.amazonaws.com" } }
    })
    error_message = "With KMS, the agent policy must allow GenerateDataKey and Decrypt on the key, through S3 only."
  }
}

run "tls_policy_off" {
  variables {
    attach_deny_insecure_transport_policy = false
  }

  assert {
    condition     = length(aws_s3_bucket_policy.this) == 0
    error_message = "attach_deny_insecure_transport_policy = false must leave the bucket without a policy."
  }
}

run "ttl_rules_by_tag_alone" {
  variables {
    ttl_rules_match_key_prefix = false
  }

  assert {
    condition = alltrue([
      for i, days in [1, 7, 30] :
      aws_s3_bucket_lifecycle_configuration.this.rule[i].id == "s3claim-ttl-${days}d" &&
      length(aws_s3_bucket_lifecycle_configuration.this.rule[i].filter[0].and) == 0 &&
      aws_s3_bucket_lifecycle_configuration.this.rule[i].filter[0].tag[0].key == "s3claim-ttl-days" &&
      aws_s3_bucket_lifecycle_configuration.this.rule[i].filter[0].tag[0].value == tostring(days) &&
      aws_s3_bucket_lifecycle_configuration.this.rule[i].expiration[0].days == days
    ])
    error_message = "ttl_rules_match_key_prefix = false must filter each TTL class N by the tag s3claim-ttl-days=N alone."
  }

  assert {
    condition     = length(aws_s3_bucket_lifecycle_configuration.this.rule) == 4
    error_message = "The TTL rules by tag alone keep one rule per class plus the multipart-abort rule."
  }
}

run "versioning_enabled" {
  variables {
    versioning_enabled                 = true
    noncurrent_version_expiration_days = 3
  }

  assert {
    condition     = aws_s3_bucket_versioning.this[0].versioning_configuration[0].status == "Enabled"
    error_message = "versioning_enabled must turn versioning on."
  }

  assert {
    condition     = length(aws_s3_bucket_lifecycle_configuration.this.rule) == 5
    error_message = "Versioning adds exactly one rule, for noncurrent versions."
  }

  assert {
    condition = (
      aws_s3_bucket_lifecycle_configuration.this.rule[3].id == "s3claim-noncurrent-versions" &&
      aws_s3_bucket_lifecycle_configuration.this.rule[3].filter[0].prefix == "claims/" &&
      aws_s3_bucket_lifecycle_configuration.this.rule[3].noncurrent_version_expiration[0].noncurrent_days == 3 &&
      aws_s3_bucket_lifecycle_configuration.this.rule[3].expiration[0].expired_object_delete_marker == true
    )
    error_message = "With versioning, noncurrent versions under the prefix must expire after noncurrent_version_expiration_days."
  }
}

run "custom_classes_prefix_endpoint_and_roles" {
  variables {
    ttl_day_classes  = [2, 90]
    key_prefix       = "agents/results/"
    endpoint_url     = "http://127.0.0.1:5000"
    agent_role_names = ["agent-a", "agent-b"]
  }

  assert {
    condition = (
      length(aws_s3_bucket_lifecycle_configuration.this.rule) == 3 &&
      aws_s3_bucket_lifecycle_configuration.this.rule[1].filter[0].and[0].prefix == "agents/results/" &&
      aws_s3_bucket_lifecycle_configuration.this.rule[1].filter[0].and[0].tags == tomap({ "s3claim-ttl-days" = "90" }) &&
      aws_s3_bucket_lifecycle_configuration.this.rule[1].expiration[0].days == 90
    )
    error_message = "Rules must follow ttl_day_classes and key_prefix."
  }

  assert {
    condition = (
      output.store_env["S3CLAIM_TTL_DAY_CLASSES"] == "[2,90]" &&
      output.store_env["S3CLAIM_PREFIX"] == "agents/results/" &&
      output.store_env["S3CLAIM_ENDPOINT_URL"] == "http://127.0.0.1:5000" &&
      !contains(keys(output.store_env), "S3CLAIM_KMS_KEY_ID")
    )
    error_message = "store_env must carry the classes, the prefix and the endpoint."
  }

  assert {
    condition = (
      length(aws_iam_policy.agent) == 1 &&
      aws_iam_policy.agent[0].policy == output.iam_policy_json &&
      toset(keys(aws_iam_role_policy_attachment.agent)) == toset(["agent-a", "agent-b"])
    )
    error_message = "Named agent roles must get the agent policy attached."
  }
}

run "rejects_duplicate_classes" {
  command = plan

  variables {
    ttl_day_classes = [7, 7]
  }

  expect_failures = [var.ttl_day_classes]
}

run "rejects_unsorted_classes" {
  command = plan

  variables {
    ttl_day_classes = [30, 7, 1]
  }

  expect_failures = [var.ttl_day_classes]
}

run "rejects_fractional_or_zero_days" {
  command = plan

  variables {
    ttl_day_classes = [0, 1.5]
  }

  expect_failures = [var.ttl_day_classes]
}

run "rejects_prefix_without_slash" {
  command = plan

  variables {
    key_prefix = "claims"
  }

  expect_failures = [var.key_prefix]
}

run "rejects_bad_kms_arn" {
  command = plan

  variables {
    kms_key_arn = "alias/claims"
  }

  expect_failures = [var.kms_key_arn]
}
