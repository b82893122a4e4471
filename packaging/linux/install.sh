#!/bin/sh
# Install Hearth for the current user, or with --uninstall remove it again:
#   PREFIX/lib/hearth/                  the application folder built by `make package`
#   PREFIX/bin/hearth                   a link to its executable (unless another `hearth` is there)
#   DATA/applications/APP_ID.desktop    the menu entry
#   DATA/icons/hicolor/*/apps/APP_ID.*  the icons (SVG and PNG sizes)
#   DATA/metainfo/APP_ID.metainfo.xml   the AppStream description for software centres
# PREFIX defaults to ~/.local and DATA to $XDG_DATA_HOME (~/.local/share); when PREFIX is given,
# DATA is PREFIX/share. BUNDLE (default dist/hearth) is the application folder to install.
set -eu

APP_ID=io.github.hearth.Hearth
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(dirname "$(dirname "$HERE")")
BUNDLE=${BUNDLE:-$ROOT/dist/hearth}

if [ -n "${PREFIX:-}" ]; then
    DATA=$PREFIX/share
else
    PREFIX=$HOME/.local
    DATA=${XDG_DATA_HOME:-$HOME/.local/share}
fi
APPDIR=$PREFIX/lib/hearth
BINLINK=$PREFIX/bin/hearth

refresh_caches() {
    # Menus and icon themes notice new files by themselves on most desktops; these help the rest.
    if command -v update-desktop-database >/dev/null 2>&1; then
        update-desktop-database -q "$DATA/applications" || true
    fi
    if command -v gtk-update-icon-cache >/dev/null 2>&1 && [ -f "$DATA/icons/hicolor/index.theme" ]; then
        gtk-update-icon-cache -q -t "$DATA/icons/hicolor" || true
    fi
}

uninstall() {
    if [ -L "$BINLINK" ] && [ "$(readlink "$BINLINK")" = "$APPDIR/hearth" ]; then
        rm -f "$BINLINK"
    fi
    rm -rf "$APPDIR"
    rm -f "$DATA/applications/$APP_ID.desktop" "$DATA/metainfo/$APP_ID.metainfo.xml"
    find "$DATA/icons/hicolor" -path "*/apps/$APP_ID.*" -exec rm -f {} + 2>/dev/null || true
    refresh_caches
    echo "Hearth removed from $PREFIX (your data folder is left as it is)"
}

install_all() {
    if [ ! -x "$BUNDLE/hearth" ]; then
        echo "install.sh: $BUNDLE/hearth is not built: run \`make package\` first" >&2
        exit 1
    fi

    # The application folder: copied beside the old one, then swapped in.
    mkdir -p "$PREFIX/lib"
    rm -rf "$APPDIR.new"
    cp -R "$BUNDLE" "$APPDIR.new"
    rm -rf "$APPDIR"
    mv "$APPDIR.new" "$APPDIR"

    # The command: a link, unless something that is not ours already answers to `hearth` there.
    mkdir -p "$PREFIX/bin"
    if [ -e "$BINLINK" ] && ! [ -L "$BINLINK" ]; then
        echo "install.sh: $BINLINK exists and is not a link; left alone (run $APPDIR/hearth)" >&2
    else
        ln -sfn "$APPDIR/hearth" "$BINLINK"
    fi

    # The desktop entry runs the installed executable by its full path: the menu does not
    # always search ~/.local/bin.
    mkdir -p "$DATA/applications"
    sed -e "s|^Exec=hearth |Exec=\"$APPDIR/hearth\" |" -e "s|^TryExec=hearth\$|TryExec=$APPDIR/hearth|" \
        "$HERE/$APP_ID.desktop" > "$DATA/applications/$APP_ID.desktop"
    chmod 644 "$DATA/applications/$APP_ID.desktop"

    (cd "$HERE/icons" && find hicolor -name "$APP_ID.*" -type f) | while read -r icon; do
        mkdir -p "$DATA/icons/$(dirname "$icon")"
        cp "$HERE/icons/$icon" "$DATA/icons/$icon"
    done

    mkdir -p "$DATA/metainfo"
    cp "$HERE/$APP_ID.metainfo.xml" "$DATA/metainfo/$APP_ID.metainfo.xml"

    refresh_caches
    echo "Hearth installed: $APPDIR (command: $BINLINK, menu entry: $DATA/applications/$APP_ID.desktop)"
}

case "${1:-}" in
    "") install_all ;;
    --uninstall) uninstall ;;
    *) echo "usage: install.sh [--uninstall]" >&2; exit 2 ;;
esac
