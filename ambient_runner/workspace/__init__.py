"""The workspace as the platform's Files tab, git panel, repositories and workflows see it (WORKSPACE_PATH)."""
