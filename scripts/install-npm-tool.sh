# shellcheck shell=bash
# The part scripts/install-copilot.sh, install-opencode.sh, install-gemini-cli.sh,
# install-claude-acp.sh and install-codex-acp.sh share:
# installing a pinned npm package into the project-local directory
# .tools/<name>, idempotently. It is sourced, not run:
#
#   source "$(dirname "${BASH_SOURCE[0]}")/install-npm-tool.sh"
#   npm_tool_init copilot @github/copilot "$VERSION"  # sets root, dest, stamp
#   npm_tool_need npm node                           # else exit 1
#   npm_tool_installed "$its_exe" && exit 0          # prints it when it is there
#   npm_tool_install "about 190 MB"                  # else exit 1
#   VAR=value npm_tool_check_version CLI "the CLI" node "$loader" --version
#   npm_tool_done "$its_file"
#
# Every message starts with "install-<name>:" and goes to stderr; a failure
# exits the script with status 1.

# npm_tool_init NAME PACKAGE VERSION sets root (the repository), dest
# (.tools/NAME) and stamp (the file naming the version installed).
npm_tool_init() {
	npm_tool_name="$1"
	npm_tool_package="$2"
	npm_tool_version="$3"
	root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
	dest="$root/.tools/$npm_tool_name"
	stamp="$dest/.installed-version"
}

# npm_tool_fail MESSAGE... prints the message and exits 1.
npm_tool_fail() {
	echo "install-$npm_tool_name: $*" >&2
	exit 1
}

# npm_tool_need COMMAND... exits 1 unless every command is on PATH.
npm_tool_need() {
	local tool
	for tool in "$@"; do
		if ! command -v "$tool" >/dev/null 2>&1; then
			npm_tool_fail "$tool is not installed (needed for $npm_tool_package@$npm_tool_version)"
		fi
	done
}

# npm_tool_current succeeds when the stamp names the version wanted; the
# caller checks its files too.
npm_tool_current() {
	[[ -f "$stamp" && "$(cat "$stamp")" == "$npm_tool_version" ]]
}

# npm_tool_installed EXE succeeds, printing EXE, when the version wanted is
# installed and EXE is there to run.
npm_tool_installed() {
	npm_tool_current && [[ -x "$1" ]] && echo "$1"
}

# npm_tool_install SIZE installs the package into dest (SIZE, such as
# "about 190 MB", for the message), its output in dest/npm-install.log.
npm_tool_install() {
	mkdir -p "$dest"
	# A private package.json keeps npm from walking up to the repository root.
	if [[ ! -f "$dest/package.json" ]]; then
		printf '{\n  "name": "pilotdesk-tools-%s",\n  "private": true\n}\n' "$npm_tool_name" >"$dest/package.json"
	fi
	rm -f "$stamp"

	log="$dest/npm-install.log"
	echo "install-$npm_tool_name: installing $npm_tool_package@$npm_tool_version into $dest ($1)..." >&2
	if ! npm install --prefix "$dest" --no-audit --no-fund --no-save --loglevel=error \
		"$npm_tool_package@$npm_tool_version" >"$log" 2>&1; then
		echo "install-$npm_tool_name: npm install $npm_tool_package@$npm_tool_version failed:" >&2
		tail -n 20 "$log" >&2
		exit 1
	fi
}

# npm_tool_check_version WHAT SAYER COMMAND... runs COMMAND (the tool's
# --version; assignments before the call are its environment) and exits 1
# unless it runs and names the version wanted: "the installed WHAT does not
# run", "expected version …, SAYER says: …".
npm_tool_check_version() {
	local what="$1" sayer="$2" out
	shift 2
	if ! out="$("$@" 2>&1)"; then
		npm_tool_fail "the installed $what does not run: $out"
	fi
	case "$out" in
	*"$npm_tool_version"*) ;;
	*) npm_tool_fail "expected version $npm_tool_version, $sayer says: $out" ;;
	esac
}

# npm_tool_done PATH records the version installed and prints PATH.
npm_tool_done() {
	echo "$npm_tool_version" >"$stamp"
	echo "$1"
}

# npm_tool_package_bin EXE SIZE is all of an install for a package whose
# executable EXE (in node_modules/.bin) has no --version, such as Zed's
# ACP adapters: it installs the package unless the version wanted is
# there, checks that the package's package.json names that version, and
# prints the path of EXE.
npm_tool_package_bin() {
	local bin="$dest/node_modules/.bin/$1"
	npm_tool_need npm node
	npm_tool_installed "$bin" && return 0
	npm_tool_install "$2"
	if [[ ! -x "$bin" ]]; then
		npm_tool_fail "npm finished but $bin is missing (see $log)"
	fi
	npm_tool_check_version "package" "its package.json" \
		node -p 'require(process.argv[1]).version' "$dest/node_modules/$npm_tool_package/package.json"
	npm_tool_done "$bin"
}
