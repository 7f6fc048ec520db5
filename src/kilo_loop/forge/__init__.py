"""The code forges (GitHub, GitLab, Gitea/Forgejo): which one a remote is, and their REST APIs for what the
loop needs — reading an issue as a goal, commenting on it, opening the run's pull request."""
