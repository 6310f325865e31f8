variable "endpoint" {
  description = "URL of the local S3 emulator, e.g. http://127.0.0.1:5000 for `moto_server`."
  type        = string
  default     = "http://127.0.0.1:5000"
}

variable "bucket" {
  description = "Name of the claim bucket on the emulator."
  type        = string
  default     = "s3claim-local"
}
