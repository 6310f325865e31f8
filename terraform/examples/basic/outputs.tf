output "bucket_name" {
  description = "Name of the claim bucket."
  value       = module.claims.bucket_name
}

output "iam_policy_json" {
  description = "Least-privilege policy for the agent role."
  value       = module.claims.iam_policy_json
}

output "store_env" {
  description = "The S3CLAIM_* variables the store reads, all but S3CLAIM_HANDLE_KEY."
  value       = module.claims.store_env
}
