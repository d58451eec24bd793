/*
 * main.c — the `airlock` command: subcommand dispatch, --help and version.
 *
 * Each subcommand lives in its own file and receives argv starting at its own
 * name. Nothing here touches the engine; see cli.h for the exit codes.
 */
#include <signal.h>
#include <stdio.h>
#include <string.h>

#include "run.h" /* cli.h, and cli_python */

static const char usage_text[] =
    "usage: airlock <command> [options]\n"
    "\n"
    "Run untrusted code with zero trust by default: WebAssembly in airlock's own\n"
    "engine, or any Linux program in a native or gVisor sandbox.\n"
    "\n"
    "commands:\n"
    "  run [OPTIONS] MODULE.wasm [-- ARGS...]\n"
    "                     run MODULE as a WASI command under a zero-trust\n"
    "                     policy: --dir, --env, --stdin, --fuel, --timeout,\n"
    "                     --memory, --json (see `airlock run --help`)\n"
    "  run MODULE.wasm --invoke NAME [ARGS...]\n"
    "                     instantiate MODULE with no imports and call the\n"
    "                     export NAME with ARGS, printing each result on its\n"
    "                     own line\n"
    "  python [OPTIONS] (-c CODE | FILE | -) [-- ARGS...]\n"
    "                     run Python code in CPython compiled to WebAssembly,\n"
    "                     with the options, limits and exit status of `run`\n"
    "                     and only the standard library (see `airlock python\n"
    "                     --help`)\n"
    "  exec [OPTIONS] [--] PROGRAM [ARGS...]\n"
    "                     run a Linux program in the native sandbox (namespaces,\n"
    "                     seccomp, Landlock, cgroups) or, with --isolation gvisor,\n"
    "                     inside gVisor (see `airlock exec --help`)\n"
    "  doctor [--json] [--quick]\n"
    "                     show which isolation mechanisms and backends work here\n"
    "  gc                 remove what killed airlock processes left behind\n"
    "  mcp [--config FILE]\n"
    "                     serve the Model Context Protocol on stdin/stdout\n"
    "                     (tools run_python, run_command, run_wasm)\n"
    "  audit [--db FILE] [--since T] [--token NAME] [--status S] [--json]\n"
    "                     query airlockd's audit log\n"
    "  plugin call PLUGIN.wasm|MANIFEST.json FUNCTION [OPTIONS]\n"
    "                     call a function of an Extism-compatible plugin and\n"
    "                     print its output (see `airlock plugin --help`)\n"
    "  cap (publish|fetch|call|retry) ...\n"
    "                     capabilities: plugins in an OCI registry, by URN\n"
    "                     (see `airlock cap --help`)\n"
    "  validate MODULE.wasm\n"
    "                     decode and validate MODULE; print \"ok\" or the error\n"
    "  version            print the version\n"
    "  help               print this help\n"
    "\n"
    "Run `airlock <command> --help` for a command's details.\n"
    "exit status: 0 ok, 1 module error or trap, 2 usage error; `airlock run`\n"
    "of a WASI command and `airlock python` exit with the guest's code, or\n"
    "65 invalid module, 70 trap, 71 fuel exhausted, 72 timeout, 73 memory limit;\n"
    "`airlock exec` adds 128+N (signal N), 69 backend unavailable, 74 CPU limit;\n"
    "75 cancelled (status \"cancelled\": the run was stopped from outside)\n";

static void print_version(void) {
    printf("airlock %s (WebAssembly 2.0 engine)\n", AIRLOCK_VERSION);
}

int main(int argc, char **argv) {
    /* A guest writing to a host FIFO whose reader left must get EPIPE, not
     * kill airlock with SIGPIPE before it can report the result. */
    signal(SIGPIPE, SIG_IGN);
    if (argc < 2) {
        fputs(usage_text, stderr);
        return CLI_USAGE;
    }
    const char *cmd = argv[1];
    if (!strcmp(cmd, "--help") || !strcmp(cmd, "-h") || !strcmp(cmd, "help")) {
        fputs(usage_text, stdout);
        return CLI_OK;
    }
    if (!strcmp(cmd, "version") || !strcmp(cmd, "--version")) {
        print_version();
        return CLI_OK;
    }
    if (!strcmp(cmd, "run"))
        return cli_run(argc - 1, argv + 1);
    if (!strcmp(cmd, "python"))
        return cli_python(argc - 1, argv + 1);
    if (!strcmp(cmd, "exec"))
        return cli_exec(argc - 1, argv + 1);
    if (!strcmp(cmd, "doctor"))
        return cli_doctor(argc - 1, argv + 1);
    if (!strcmp(cmd, "gc"))
        return cli_gc(argc - 1, argv + 1);
    if (!strcmp(cmd, "validate"))
        return cli_validate(argc - 1, argv + 1);
    if (!strcmp(cmd, "mcp"))
        return cli_mcp(argc - 1, argv + 1);
    if (!strcmp(cmd, "audit"))
        return cli_audit(argc - 1, argv + 1);
    if (!strcmp(cmd, "plugin"))
        return cli_plugin(argc - 1, argv + 1);
    if (!strcmp(cmd, "cap"))
        return cli_cap(argc - 1, argv + 1);

    fprintf(stderr, "airlock: unknown command '%s'\n\n", cmd);
    fputs(usage_text, stderr);
    return CLI_USAGE;
}
