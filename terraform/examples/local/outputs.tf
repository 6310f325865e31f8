output "bucket_name" {
  description = "Name of the claim bucket."
  value       = module.claims.bucket_name
}

output "key_prefix" {
  description = "Key prefix the store writes under."
  value       = module.claims.key_prefix
}

output "ttl_day_classes" {
  description = "The TTL day classes with a lifecycle rule each."
  value       = module.claims.ttl_day_classes
}

output "iam_policy_json" {
  description = "Least-privilege policy for the agent role."
  value       = module.claims.iam_policy_json
}

output "store_env" {
  description = "The S3CLAIM_* variables the store reads, all but S3CLAIM_HANDLE_KEY."
  value       = module.claims.store_env
}
