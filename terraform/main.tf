data "aws_region" "current" {}

locals {
  # The store writes this tag on every object; the lifecycle rules match on it. The key is a
  # contract with the store (s3claim's S3 layout), so it is not an input.
  ttl_tag_key = "s3claim-ttl-days"

  use_kms       = var.kms_key_arn != null
  sse_algorithm = local.use_kms ? "aws:kms" : "AES256"

  object_arn_pattern = "${aws_s3_bucket.this.arn}/${var.key_prefix}*"
}

resource "aws_s3_bucket" "this" {
  #checkov:skip=CKV_AWS_18:Access logs would need a second bucket; CloudTrail data events are the audit trail for claims.
  #checkov:skip=CKV_AWS_21:Versioning is off on purpose: a delete on a versioned bucket only adds a delete marker, so forgetting a claim would not erase it.
  #checkov:skip=CKV_AWS_144:Claims are short-lived, regenerable tool results; a replica in another region would double the copies to erase.
  #checkov:skip=CKV_AWS_145:SSE-S3 is the default; SSE-KMS is one input away (kms_key_arn) for those who need key control.
  #checkov:skip=CKV2_AWS_62:Nothing consumes bucket events; the store reads and writes claims itself.
  bucket        = var.bucket
  bucket_prefix = var.bucket_prefix
  force_destroy = var.force_destroy
  tags          = var.tags

  lifecycle {
    precondition {
      condition     = var.bucket == null || var.bucket_prefix == null
      error_message = "Set at most one of bucket and bucket_prefix."
    }
  }
}

# ACLs off: the bucket owner owns every object and only policies grant access.
resource "aws_s3_bucket_ownership_controls" "this" {
  bucket = aws_s3_bucket.this.id

  rule {
    object_ownership = "BucketOwnerEnforced"
  }
}

resource "aws_s3_bucket_public_access_block" "this" {
  bucket = aws_s3_bucket.this.id

  block_public_acls       = true
  block_public_policy     = true
  ignore_public_acls      = true
  restrict_public_buckets = true
}

resource "aws_s3_bucket_server_side_encryption_configuration" "this" {
  bucket = aws_s3_bucket.this.id

  rule {
    apply_server_side_encryption_by_default {
      sse_algorithm     = local.sse_algorithm
      kms_master_key_id = var.kms_key_arn
    }
    # A bucket key cuts KMS requests (and their cost) by caching a data key per bucket.
    bucket_key_enabled = local.use_kms ? true : null
  }
}

resource "aws_s3_bucket_versioning" "this" {
  count = var.versioning_enabled ? 1 : 0

  bucket = aws_s3_bucket.this.id

  versioning_configuration {
    status = "Enabled"
  }
}

# PutBucketLifecycleConfiguration replaces every rule of the bucket, so all rules live here.
resource "aws_s3_bucket_lifecycle_configuration" "this" {
  #checkov:skip=CKV_AWS_300:False positive: checkov drops the static abort rule below when dynamic rules sit beside it; tests/module.tftest.hcl asserts it.
  bucket = aws_s3_bucket.this.id

  # One expiration rule per TTL class. The store rounds a claim's TTL up to a class and tags the
  # object with it; lifecycle is the garbage collector behind the store's own expiry check.
  # Filtered by prefix AND tag, or (ttl_rules_match_key_prefix = false, for emulators) by the
  # tag alone: exactly one of the two blocks below is made.
  dynamic "rule" {
    for_each = var.ttl_day_classes

    content {
      id     = "s3claim-ttl-${rule.value}d"
      status = "Enabled"

      filter {
        dynamic "and" {
          for_each = var.ttl_rules_match_key_prefix ? [rule.value] : []
          iterator = days

          content {
            prefix = var.key_prefix
            tags   = { (local.ttl_tag_key) = tostring(days.value) }
          }
        }

        dynamic "tag" {
          for_each = var.ttl_rules_match_key_prefix ? [] : [rule.value]
          iterator = days

          content {
            key   = local.ttl_tag_key
            value = tostring(days.value)
          }
        }
      }

      expiration {
        days = rule.value
      }
    }
  }

  # Only when versioning is on: an expiration leaves a noncurrent version behind, which this rule
  # removes, together with the delete markers left alone.
  dynamic "rule" {
    for_each = var.versioning_enabled ? [var.noncurrent_version_expiration_days] : []

    content {
      id     = "s3claim-noncurrent-versions"
      status = "Enabled"

      filter {
        prefix = var.key_prefix
      }

      noncurrent_version_expiration {
        noncurrent_days = rule.value
      }

      expiration {
        expired_object_delete_marker = true
      }
    }
  }

  # Bucket-wide, and in a rule of its own: S3 refuses this action in a rule filtered by tag.
  rule {
    id     = "s3claim-abort-incomplete-multipart-uploads"
    status = "Enabled"

    filter {}

    abort_incomplete_multipart_upload {
      days_after_initiation = 1
    }
  }

  # S3 refuses lifecycle rules for noncurrent versions until versioning is set.
  depends_on = [aws_s3_bucket_versioning.this]
}

resource "aws_s3_bucket_policy" "this" {
  count = var.attach_deny_insecure_transport_policy ? 1 : 0

  bucket = aws_s3_bucket.this.id
  policy = jsonencode({
    Version = "2012-10-17"
    Statement = [
      {
        Sid       = "DenyInsecureTransport"
        Effect    = "Deny"
        Principal = "*"
        Action    = "s3:*"
        Resource  = [aws_s3_bucket.this.arn, "${aws_s3_bucket.this.arn}/*"]
        Condition = { Bool = { "aws:SecureTransport" = "false" } }
      },
    ]
  })

  # S3 refuses a policy while the public access block is being written.
  depends_on = [aws_s3_bucket_public_access_block.this]
}

locals {
  # Exactly what the store does, on the store's prefix only:
  #  - PutObject with x-amz-tagging and If-None-Match (s3:PutObject + s3:PutObjectTagging);
  #  - GetObject, ranged, and HeadObject (s3:GetObject);
  #  - in-place CopyObject replacing metadata and tags (s3:GetObject + s3:PutObject + s3:PutObjectTagging);
  #  - DeleteObjects, with VersionIds for erasure on a versioned bucket (s3:DeleteObject + s3:DeleteObjectVersion);
  #  - ListObjectsV2 and ListObjectVersions under the prefix (s3:ListBucket + s3:ListBucketVersions).
  # s3:ListBucket carries no prefix condition: S3 checks it, without any s3:prefix, to decide
  # whether a GET of a missing key answers 404 or 403, and the store needs the 404 to tell an
  # unknown handle (claim_unavailable) from a store fault. Keys are keyed hashes, so a listing
  # shows no tenant, run or content.
  agent_statements = concat(
    [
      {
        Sid      = "ClaimObjects"
        Effect   = "Allow"
        Action   = ["s3:DeleteObject", "s3:DeleteObjectVersion", "s3:GetObject", "s3:PutObject", "s3:PutObjectTagging"]
        Resource = [local.object_arn_pattern]
      },
      {
        Sid      = "ListClaimBucket"
        Effect   = "Allow"
        Action   = ["s3:ListBucket"]
        Resource = [aws_s3_bucket.this.arn]
      },
      {
        Sid       = "ListClaimVersions"
        Effect    = "Allow"
        Action    = ["s3:ListBucketVersions"]
        Resource  = [aws_s3_bucket.this.arn]
        Condition = { StringLike = { "s3:prefix" = ["${var.key_prefix}*"] } }
      },
    ],
    # SSE-KMS: S3 asks for a data key on every write (and copy) and decrypts on every read. It never
    # calls kms:Encrypt for the caller, so that is not granted. kms:ViaService keeps the grant from
    # being usable outside S3.
    local.use_kms ? [
      {
        Sid       = "ClaimKey"
        Effect    = "Allow"
        Action    = ["kms:Decrypt", "kms:GenerateDataKey"]
        Resource  = [var.kms_key_arn]
        Condition = { StringEquals = { "kms:ViaService" = "s3.${data.aws_region.current.name}.amazonaws.com" } }
      },
    ] : [],
  )

  agent_policy_json = jsonencode({
    Version   = "2012-10-17"
    Statement = local.agent_statements
  })
}

resource "aws_iam_policy" "agent" {
  count = length(var.agent_role_names) > 0 ? 1 : 0

  name_prefix = var.iam_policy_name_prefix
  description = "Least privilege for s3claim agents on ${aws_s3_bucket.this.id}/${var.key_prefix}"
  policy      = local.agent_policy_json
  tags        = var.tags
}

resource "aws_iam_role_policy_attachment" "agent" {
  for_each = toset(var.agent_role_names)

  role       = each.value
  policy_arn = aws_iam_policy.agent[0].arn
}
