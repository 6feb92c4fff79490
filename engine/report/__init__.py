"""What an analysis says to people and files: the JSON schema, panel statistics, atomic files."""
