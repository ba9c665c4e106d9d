# Shared by scripts/demo.sh and scripts/test.sh (sourced, not run): system tools and the project's install.
#
#   rl_require_tools PURPOSE TOOL=PACKAGE...   each missing TOOL (its Debian PACKAGE) is installed with apt-get when this user can
#                                              (root, or sudo without a password), or the script stops
#                                              saying what to install
#   rl_install_project VENV EXTRAS             pip install -e ".[EXTRAS]" into VENV; when llama-cpp-python has
#                                              to be compiled, says so first, checks the compilers and prints
#                                              a line every RL_HEARTBEAT_S seconds (30) while pip works

# apt-get, as root or through sudo without a password; fails when neither is possible.
_rl_apt_get() {
    if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
        apt-get "$@"
    elif command -v sudo >/dev/null 2>&1 && command -v apt-get >/dev/null 2>&1 && sudo -n true 2>/dev/null; then
        sudo -n apt-get "$@"
    else
        return 1
    fi
}

_rl_can_apt() {
    command -v apt-get >/dev/null 2>&1 || return 1
    [ "$(id -u)" = 0 ] && return 0
    command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null
}

rl_require_tools() {
    local purpose="$1" spec tool missing_tools=() packages=()
    shift
    for spec in "$@"; do
        tool="${spec%%=*}"
        command -v "$tool" >/dev/null 2>&1 && continue
        missing_tools+=("$tool")
        case " ${packages[*]} " in *" ${spec#*=} "*) ;; *) packages+=("${spec#*=}") ;; esac
    done
    [ "${#missing_tools[@]}" -eq 0 ] && return 0
    if _rl_can_apt; then
        echo "== apt-get install ${packages[*]} (needed for $purpose)"
        export DEBIAN_FRONTEND=noninteractive
        _rl_apt_get update -qq && _rl_apt_get install -y -qq --no-install-recommends "${packages[@]}" && return 0
        echo "error: apt-get could not install ${packages[*]}" >&2
        exit 1
    fi
    echo "error: ${missing_tools[*]} not found (needed for $purpose), and this user cannot run apt-get." >&2
    echo "       Install it first, e.g. on Debian/Ubuntu: sudo apt-get install -y ${packages[*]}" >&2
    exit 1
}

# True when llama-cpp-python is neither installed in the venv nor built already in pip's wheel cache.
_rl_llama_needs_compile() {
    local venv="$1"
    "$venv/bin/python" -c "import llama_cpp" >/dev/null 2>&1 && return 1
    local cached
    cached="$("$venv/bin/python" -m pip cache list llama_cpp_python --format=abspath 2>/dev/null || true)"
    [ -z "$cached" ]
}

# Runs the command, printing "... LABEL: still working, Nm SSs" every RL_HEARTBEAT_S seconds until it ends.
rl_with_heartbeat() {
    local label="$1" every="${RL_HEARTBEAT_S:-30}" started beat status=0
    shift
    started="$(date +%s)"
    (
        parent=$$ nap=""
        trap 'kill $nap 2>/dev/null; exit 0' TERM
        while :; do
            sleep "$every" &
            nap=$!
            wait "$nap"
            kill -0 "$parent" 2>/dev/null || exit 0  # the script is gone: stop too
            t=$(($(date +%s) - started))
            printf '   ... %s: still working, %dm%02ds\n' "$label" $((t / 60)) $((t % 60))
        done
    ) &
    beat=$!
    "$@" || status=$?
    kill "$beat" 2>/dev/null || true
    wait "$beat" 2>/dev/null || true
    return "$status"
}

rl_install_project() {
    local venv="$1" extras="$2" compile=0
    echo "== installing reasonloop[$extras] into $venv"
    "$venv/bin/python" -m pip install --quiet --upgrade pip
    case ",$extras," in
        *,local,*) _rl_llama_needs_compile "$venv" && compile=1 ;;
    esac
    if [ "$compile" = 1 ]; then
        rl_require_tools "compiling llama-cpp-python" cc=build-essential c++=build-essential make=build-essential
        echo "== llama-cpp-python (the embedded model's runtime) is published as source code only, so pip"
        echo "   compiles llama.cpp now: about 8-15 minutes on 2 cores, once (pip caches the built wheel)."
        if ! command -v cmake >/dev/null 2>&1; then
            echo "   cmake is not installed: pip fetches a cmake package for the build."
        fi
        # llama-cpp-python builds with cmake; let it use every core.
        CMAKE_BUILD_PARALLEL_LEVEL="$(nproc)" rl_with_heartbeat "compiling llama-cpp-python" \
            "$venv/bin/python" -m pip install --quiet -e ".[$extras]" || return
        echo "== llama-cpp-python compiled and installed"
    else
        "$venv/bin/python" -m pip install --quiet -e ".[$extras]"
    fi
}
