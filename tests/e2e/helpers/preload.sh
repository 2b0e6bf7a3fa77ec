# Sourced by the tests/e2e scripts that preload a shim of tests/fake (LD_PRELOAD) into
# carma or carmad (POSIX sh). Under ASan (the asan build's binaries) the runtime must
# come first among the libraries loaded, which a preloaded shim puts before it: ASan
# refuses to start unless that check is off. PRELOAD_ASAN_OPTIONS is $ASAN_OPTIONS as
# the test was given it, with the check off, for ASAN_OPTIONS= beside each LD_PRELOAD=
# (a variable, not a wrapper command: the shell functions of daemon_lib.sh take the
# assignments too). Harmless in a build without ASan.
PRELOAD_ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}verify_asan_link_order=0"
