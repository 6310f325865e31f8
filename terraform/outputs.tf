output "bucket_name" {
  description = "Name of the claim bucket (S3CLAIM_BUCKET)."
  value       = aws_s3_bucket.this.id
}

output "bucket_arn" {
  description = "ARN of the claim bucket."
  value       = aws_s3_bucket.this.arn
}

output "key_prefix" {
  description = "Key prefix the store writes under (S3CLAIM_PREFIX)."
  value       = var.key_prefix
}

output "ttl_day_classes" {
  description = "The TTL day classes, each with its lifecycle expiration rule."
  value       = var.ttl_day_classes
}

output "iam_policy_json" {
  description = "Least-privilege IAM policy document (JSON) for the agent role: exactly the S3 (and KMS) actions the store uses, on key_prefix only."
  value       = local.agent_policy_json
}

output "iam_policy_arn" {
  description = "ARN of the IAM policy attached to agent_role_names, or null when none were given."
  value       = try(aws_iam_policy.agent[0].arn, null)
}

output "store_env" {
  description = "The S3CLAIM_* environment the store reads (S3ClaimCheckStore.from_settings()), all but the secret S3CLAIM_HANDLE_KEY."
  value = tomap(merge(
    {
      S3CLAIM_BUCKET          = aws_s3_bucket.this.id
      S3CLAIM_PREFIX          = var.key_prefix
      S3CLAIM_REGION          = data.aws_region.current.name
      S3CLAIM_SSE             = local.sse_algorithm
      S3CLAIM_TTL_DAY_CLASSES = jsonencode(var.ttl_day_classes)
    },
    local.use_kms ? { S3CLAIM_KMS_KEY_ID = var.kms_key_arn } : {},
    var.endpoint_url != null ? { S3CLAIM_ENDPOINT_URL = var.endpoint_url } : {},
  ))
}
