variable "bucket" {
  description = "Name of the claim bucket. Conflicts with bucket_prefix; leave both null for a name Terraform makes up."
  type        = string
  default     = null
}

variable "bucket_prefix" {
  description = "Prefix of a unique bucket name that Terraform completes. Conflicts with bucket."
  type        = string
  default     = null

  validation {
    condition     = var.bucket_prefix == null ? true : length(var.bucket_prefix) <= 37
    error_message = "bucket_prefix must be at most 37 characters: S3 adds 26 to make the name unique and a bucket name is at most 63."
  }
}

variable "force_destroy" {
  description = "Let `terraform destroy` empty the bucket first. Off by default: destroying a bucket that holds live claims should be a decision."
  type        = bool
  default     = false
}

variable "key_prefix" {
  description = "Key prefix under which the store writes every claim (S3CLAIM_PREFIX). The lifecycle rules and the agent policy cover this prefix only."
  type        = string
  default     = "claims/"

  validation {
    condition     = length(var.key_prefix) > 1 && endswith(var.key_prefix, "/") && !startswith(var.key_prefix, "/") && !strcontains(var.key_prefix, "*")
    error_message = "key_prefix must be non-empty, end with \"/\", not start with \"/\" and hold no \"*\", e.g. \"claims/\"."
  }
}

variable "ttl_day_classes" {
  description = "The retention classes, in whole days, that the store rounds each claim's TTL up to. One expiration rule is made per class, matching the tag s3claim-ttl-days=N the store writes on every object."
  type        = list(number)
  default     = [1, 7, 30]
  nullable    = false

  validation {
    condition     = length(var.ttl_day_classes) > 0 && length(var.ttl_day_classes) <= 100
    error_message = "ttl_day_classes needs between 1 and 100 classes."
  }

  validation {
    condition     = alltrue([for days in var.ttl_day_classes : days >= 1 && floor(days) == days])
    error_message = "Every TTL day class must be a whole number of days, at least 1: S3 lifecycle expiration counts whole days."
  }

  validation {
    condition     = alltrue([for i, days in var.ttl_day_classes : i == 0 || days > var.ttl_day_classes[max(i - 1, 0)]])
    error_message = "TTL day classes must be strictly ascending, e.g. [1, 7, 30]: the store rounds a TTL up to the first class that holds it, and two rules for the same tag would conflict."
  }
}

variable "kms_key_arn" {
  description = "ARN of a KMS key for SSE-KMS (with an S3 bucket key). Null keeps SSE-S3 (AES256)."
  type        = string
  default     = null

  validation {
    condition     = var.kms_key_arn == null || can(regex("^arn:aws[a-z-]*:kms:", var.kms_key_arn))
    error_message = "kms_key_arn must be a KMS key ARN (arn:aws:kms:REGION:ACCOUNT:key/ID), or null for SSE-S3."
  }
}

variable "versioning_enabled" {
  description = "Turn on bucket versioning. Off by default and not recommended: on a versioned bucket a delete only adds a delete marker, so forgetting a claim no longer erases it unless the store deletes every version."
  type        = bool
  default     = false
  nullable    = false
}

variable "noncurrent_version_expiration_days" {
  description = "Days after which a noncurrent version under key_prefix is expired. Used only when versioning_enabled is true."
  type        = number
  default     = 1
  nullable    = false

  validation {
    condition     = var.noncurrent_version_expiration_days >= 1 && floor(var.noncurrent_version_expiration_days) == var.noncurrent_version_expiration_days
    error_message = "noncurrent_version_expiration_days must be a whole number of days, at least 1."
  }
}

variable "attach_deny_insecure_transport_policy" {
  description = "Attach a bucket policy that denies every request not made over TLS (aws:SecureTransport = false). Turn off only for S3 emulators such as moto, which apply a Deny to every request."
  type        = bool
  default     = true
  nullable    = false
}

variable "ttl_rules_match_key_prefix" {
  description = "Filter each TTL rule by key_prefix and its day-class tag (true), or by the tag alone (false). Turn off only for S3 emulators such as moto, which drop part of an And filter: hashicorp/aws then waits for the rule it sent and times out. The tag is written by the store alone, so either way a rule collects only claims of its class."
  type        = bool
  default     = true
  nullable    = false
}

variable "agent_role_names" {
  description = "Names of existing IAM roles (the agents') to attach the least-privilege store policy to. Empty: the policy is only returned as iam_policy_json."
  type        = list(string)
  default     = []
  nullable    = false
}

variable "iam_policy_name_prefix" {
  description = "Name prefix of the IAM policy created when agent_role_names is not empty."
  type        = string
  default     = "s3claim-agent-"
  nullable    = false
}

variable "endpoint_url" {
  description = "S3 endpoint the store should use (S3CLAIM_ENDPOINT_URL), for an S3-compatible server or emulator. Null on AWS: the variable is then left out of store_env."
  type        = string
  default     = null

  validation {
    condition     = var.endpoint_url == null || can(regex("^https?://", var.endpoint_url))
    error_message = "endpoint_url must be an http:// or https:// URL, or null."
  }
}

variable "tags" {
  description = "Tags for the bucket and the IAM policy."
  type        = map(string)
  default     = {}
  nullable    = false
}
