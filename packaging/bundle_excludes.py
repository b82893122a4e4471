"""What the bundle (packaging/hearth.spec) leaves out, in one place: the spec reads it, and
tests/packaging/test_excludes.py checks that nothing the app imports is among it, so a module
left out by mistake fails `make test` without building the bundle.

Plain data with no imports: the spec runs it by path (this folder is no package; its name is
also the `packaging` library's)."""

# Spark reporting: run it from a source checkout (`pip install -e '.[analytics]'`).
# (dateutil stays: sqlite-utils, the open archive's, imports it.)
SPARK = ["pyspark", "py4j", "matplotlib", "numpy", "pandas", "pyarrow", "contourpy",
         "kiwisolver", "fontTools", "cycler", "pyparsing"]
# Test and developer tools that may sit in the build environment.
TOOLS = ["pytest", "_pytest", "pytestqt", "hypothesis", "chispa", "ruff", "IPython",
         "tkinter", "_tkinter", "pydoc_data", "lib2to3", "setuptools", "pkg_resources"]
# Qt modules to leave out, with their plugins and libraries, even when a hook asks for them.
# A module Hearth's own code imports (read from the sources by the spec) always stays in.
UNUSED_QT = [
    "Qt3DAnimation", "Qt3DCore", "Qt3DExtras", "Qt3DInput", "Qt3DLogic", "Qt3DRender",
    "QtBluetooth", "QtCharts", "QtConcurrent", "QtDataVisualization", "QtDBus", "QtDesigner",
    "QtGraphs", "QtHelp", "QtHttpServer", "QtLocation", "QtMultimedia", "QtMultimediaWidgets",
    "QtNetwork", "QtNetworkAuth", "QtNfc", "QtOpenGL", "QtOpenGLWidgets", "QtPdf",
    "QtPdfWidgets", "QtPositioning", "QtPrintSupport", "QtQml", "QtQuick", "QtQuick3D",
    "QtQuickControls2", "QtQuickTest", "QtQuickWidgets", "QtRemoteObjects", "QtScxml",
    "QtSensors", "QtSerialBus", "QtSerialPort", "QtSpatialAudio", "QtSql", "QtStateMachine",
    "QtSvg", "QtSvgWidgets", "QtTest", "QtTextToSpeech", "QtUiTools", "QtWebChannel",
    "QtWebEngineCore", "QtWebEngineQuick", "QtWebEngineWidgets", "QtWebSockets", "QtWebView",
    "QtXml",
]
# Modules of the app that only the Spark reporting imports: left out with it.
SPARK_ONLY = ["analytics._html", "analytics._pipeline", "analytics.report", "analytics.synth"]
