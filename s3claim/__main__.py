"""`python -m s3claim`: the same as the `s3claim` command."""

from s3claim.cli import main

if __name__ == "__main__":
    main()
