# Sourced (not run) by install.sh and test.sh: the one place that says which virtual environment
# byog's scripts install into and run from.
#   BYOG_VENV set       -> that path
#   a venv is active    -> $VIRTUAL_ENV, used as is
#   otherwise           -> .venv in the checkout (the caller has cd'd to the checkout root)
byog_venv() {
  if [ -n "${BYOG_VENV:-}" ]; then
    case "$BYOG_VENV" in /*) echo "$BYOG_VENV" ;; *) echo "$PWD/$BYOG_VENV" ;; esac
  elif [ -n "${VIRTUAL_ENV:-}" ]; then
    echo "$VIRTUAL_ENV"
  else
    echo "$PWD/.venv"
  fi
}
