#!/bin/sh
# install.sh: `ninja install` and `ninja uninstall` (docs/library.md).
#
#   sh tools/install.sh install|uninstall PREFIX MANIFEST
#
# MANIFEST (build/install-manifest.txt, written by configure.py) has one line
# per thing installed: "file SOURCE FOLDER" copies SOURCE into PREFIX/FOLDER,
# "link TARGET PATH" makes PREFIX/PATH a symbolic link to TARGET. DESTDIR,
# when set, goes in front of PREFIX (staged installs, packages); nothing is
# written outside DESTDIR/PREFIX. uninstall removes exactly what install
# made, then the folders kcs alone used when they are left empty.
set -eu
action=$1 prefix=$2 manifest=$3
root="${DESTDIR:-}$prefix"
case $action in install|uninstall) ;; *) echo "install.sh: unknown action '$action'" >&2; exit 2 ;; esac
[ -r "$manifest" ] || { echo "install.sh: cannot read $manifest (run ./configure.py)" >&2; exit 2; }

grep -v '^#' "$manifest" | while read -r kind what where; do
    case $kind in
    file)
        if [ "$action" = install ]; then
            case $what in *.so.*) mode=755 ;; *) mode=644 ;; esac
            mkdir -p "$root/$where"
            install -m "$mode" "$what" "$root/$where/"
            echo "installed $root/$where/$(basename "$what")"
        else
            rm -f "$root/$where/$(basename "$what")"
        fi ;;
    link)
        if [ "$action" = install ]; then
            mkdir -p "$root/$(dirname "$where")"
            ln -sf "$what" "$root/$where"
            echo "installed $root/$where -> $what"
        else
            rm -f "$root/$where"
        fi ;;
    *) echo "install.sh: $manifest: unknown line kind '$kind'" >&2; exit 2 ;;
    esac
done
if [ "$action" = uninstall ]; then
    rmdir "$root/include/kcs" 2>/dev/null || true
    echo "removed kcs from $root"
fi
