#!/usr/bin/env bash
# Build libmcp.so and its pkg-config file for the venv whose python is $1, into $2.
#   bindings/c/build.sh .venv/bin/python build/libmcp [extra compiler flags, e.g. -fsanitize=address]
# The library links the libpython that venv runs on and remembers the venv's python (absolute,
# not resolved: a venv is found by the pyvenv.cfg beside its bin/), which MCP_PYTHON overrides.
set -euo pipefail
python=$1; out=$2; shift 2
root=$(cd "$(dirname "$0")/../.." && pwd)
[[ -x $python ]] || { echo "bindings/c/build.sh: no python at $python; run make install first" >&2; exit 1; }
python_abs="$(cd "$(dirname "$python")" && pwd)/$(basename "$python")"
read -r shared libdir ldlibrary include version < <("$python" -c 'import sysconfig as s, sys
print(s.get_config_var("Py_ENABLE_SHARED") or 0, s.get_config_var("LIBDIR"), s.get_config_var("LDLIBRARY"),
      s.get_paths()["include"], "%d.%d" % sys.version_info[:2])')
if [[ $shared != 1 ]]; then
    echo "bindings/c/build.sh: $python_abs runs on a Python built without --enable-shared (no libpython$version.so);" \
         "libmcp embeds Python and needs one: make the venv from a shared-library Python (Debian's python3, or pyenv with PYTHON_CONFIGURE_OPTS=--enable-shared)" >&2
    exit 1
fi
mkdir -p "$out"
out=$(cd "$out" && pwd)
${CC:-cc} -std=gnu11 -O2 -g -fPIC -shared -Wall -Wextra -Werror "$@" \
    -I"$root/include" -I"$include" -DMCP_DEFAULT_PYTHON="\"$python_abs\"" \
    "$root"/bindings/c/*.c -o "$out/libmcp.so.1" \
    -Wl,-soname,libmcp.so.1 -Wl,--version-script="$root/bindings/c/libmcp.map" \
    -L"$libdir" -l"python$version" -Wl,-rpath,"$libdir" -lpthread -lm
ln -sf libmcp.so.1 "$out/libmcp.so"
sed -e "s|@INCLUDEDIR@|$root/include|" -e "s|@LIBDIR@|$out|" "$root/bindings/c/mcp.pc.in" > "$out/mcp.pc"
echo "bindings/c/build.sh: built $out/libmcp.so for $python_abs (Python $version)"
