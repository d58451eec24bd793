# bench/lib.bash — shared by the bench/*.sh scripts that run airlock.
# The sourcing script sets NAME (for messages), AIRLOCK and TMP, and defines log.

# need COMMAND PACKAGE: stop with an install hint when COMMAND is missing.
need() {
    command -v "$1" >/dev/null 2>&1 || { log "$NAME: '$1' not found (apt-get install $2)"; exit 2; }
}

# A private copy of the airlock binary in $AL (built first when the default
# release binary is missing): a concurrent rebuild must not change it
# between the rows of a table.
copy_airlock() {
    if [ ! -x "$AIRLOCK" ] && [ "$AIRLOCK" = build/release/airlock ]; then
        log "== building the release airlock"
        flock /tmp/airlock-build.lock make -s -j2 release >&2
    fi
    [ -x "$AIRLOCK" ] || { log "$NAME: no airlock binary at $AIRLOCK"; exit 2; }
    cp "$AIRLOCK" "$TMP/airlock"
    AL=$TMP/airlock
}
