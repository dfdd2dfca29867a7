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
    """Start the runner selected by RUNNER_TYPE on AGUI_PORT (default 8001)."""
    from ambient_runner.app import create_app
    from ambient_runner.bridges.registry import create_bridge
    from ambient_runner.logging_setup import configure_logging
    from ambient_runner.server import serve as serve_app
    from ambient_runner.settings import load_settings
    from ambient_runner.state.extension import state_extensions

    settings = load_settings()
    configure_logging(settings.runner_log_level)
    bridge = create_bridge(settings)
    if offline_if_no_credentials and not settings.runner_scripted_model:
        readiness = bridge.readiness()
        if readiness.missing:
            typer.secho(
                f"No credentials for {settings.runner_type} (set one of: {', '.join(readiness.missing)}).\n"
                "Serving the built-in scripted model on 127.0.0.1 instead (RUNNER_SCRIPTED_MODEL=true): the real "
                "CLI runs, nothing leaves this machine.", fg=typer.colors.YELLOW, err=True)
            settings = settings.model_copy(update={"runner_scripted_model": True})
            bridge = create_bridge(settings)
    typer.secho(f"ambient-runner ({settings.runner_type}) on http://{settings.agui_host}:{settings.agui_port}",
                err=True)
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
