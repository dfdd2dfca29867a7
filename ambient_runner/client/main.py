"""The ``ambient-runner`` command: ``serve`` starts the service, ``run`` talks to a runner (see ``client.py``)."""

from __future__ import annotations

import typer

app = typer.Typer(add_completion=False, no_args_is_help=True,
                  help="Run a coding-agent CLI as an AG-UI service, or talk to one.")


@app.command()
def serve(
    offline_if_no_credentials: bool = typer.Option(
        False, help="Serve the built-in scripted model on loopback when no credentials are configured."),
) -> None:
    """Start the runner selected by RUNNER_TYPE on 127.0.0.1:AGUI_PORT (default 8001), with a workspace and state
    dir of its own under the user's cache dir unless WORKSPACE_PATH / RUNNER_STATE_ROOT say otherwise."""
    import os

    from ambient_runner.app import create_app
    from ambient_runner.bridges.registry import create_bridge
    from ambient_runner.client.foreground import own_foreground
    from ambient_runner.client.local import local_defaults, prepare_workspace, use_own_temp_dir
    from ambient_runner.logging_setup import configure_logging
    from ambient_runner.server import serve as serve_app
    from ambient_runner.settings import load_settings
    from ambient_runner.state.extension import state_extensions

    use_own_temp_dir(os.environ)
    defaults = local_defaults(os.environ)
    settings = load_settings(**defaults)
    configure_logging(settings.runner_log_level)
    bridge = create_bridge(settings)
    if offline_if_no_credentials and not settings.runner_scripted_model:
        readiness = bridge.readiness()
        if readiness.missing:
            typer.secho(
                f"No credentials for {settings.runner_type} (set one of: {', '.join(readiness.missing)}): serving "
                "the built-in scripted model on 127.0.0.1 instead (RUNNER_SCRIPTED_MODEL=true). The real CLI runs; "
                "nothing leaves this machine.", fg=typer.colors.YELLOW, err=True)
            settings = settings.model_copy(update={"runner_scripted_model": True})
            bridge = create_bridge(settings)
    if "workspace_path" in defaults:  # never a git init in a workspace someone named
        prepare_workspace(settings.workspace_path)
    with own_foreground():
        serve_app(create_app(settings, bridge, extensions=state_extensions(settings)), settings)


def _register_client() -> None:
    try:
        from ambient_runner.client.run import register
    except ImportError:  # pragma: no cover - client not installed
        return
    register(app)


_register_client()

if __name__ == "__main__":
    app()
