variable "region" {
  description = "AWS region of the claim bucket."
  type        = string
  default     = "us-east-1"
}

variable "agent_role_names" {
  description = "Existing IAM roles of the agents that read and write claims."
  type        = list(string)
  default     = []
}
