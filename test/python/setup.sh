#!/bin/sh
# Makes .venv: the Python MCP software the tests run (test/python/requirements.txt, pinned), from
# the package index pip is configured with. Once; again only when the requirements change.
# --retries 0 --timeout 5: an index that cannot be reached fails the install at once.
set -eu
cd "$(dirname "$0")/../.."
stamp=.venv/requirements.installed
if [ -x .venv/bin/python ] && cmp -s test/python/requirements.txt "$stamp"; then exit 0; fi
echo "test/python/setup.sh: installing the Python test servers and clients into .venv" >&2
python3 -m venv .venv
.venv/bin/pip install --quiet --quiet --retries 0 --timeout 5 -r test/python/requirements.txt
cp test/python/requirements.txt "$stamp"
