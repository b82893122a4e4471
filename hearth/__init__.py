"""The `hearth` program: the launcher above app/ and ui/ (docs/ARCHITECTURE.md "Layers").

`hearth.launcher.main` is the installed `hearth` command (and `python -m hearth`, and the
packaged app's executable): the command line of app.cli, with the window's commands (`hearth`
alone on a display, `hearth gui`, `hearth screenshot`) run here, the one place that imports
ui/. app/ never imports it."""
