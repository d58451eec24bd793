/*
 * policy_file.h — `airlock exec --policy FILE` and the egress flags
 * (--allow-domain, --deny-domain, --allow-port, --allow-ip, --inject-header,
 * --resolve, --egress-*): one representation for both, so the file and the
 * command line go through the same syntactic checks.
 *
 * Ownership: a cli_egress and a cli_policy own every string they point to (in
 * their `strings` pool) and every array; one _free releases all of it. The
 * pointers can be handed to al_exec as they are (al_egress borrows them), so
 * the struct must outlive the al_exec call.
 *
 * Checks here are syntactic only (src/service/policy_json.c, shared with
 * airlockd's request bodies): a domain is letters, digits, '-' and dots, a
 * CIDR parses with inet_pton, a header has a token name and a value without
 * control bytes. The library checks every rule again and answers status
 * "error" for what it refuses.
 */
#ifndef AIRLOCK_CLI_POLICY_FILE_H
#define AIRLOCK_CLI_POLICY_FILE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "run.h"
/* By its path: the CLI is built without -Isrc/service, but the egress rules
 * and their JSON are one implementation for `airlock exec` and airlockd. */
#include "../service/policy_json.h"

/* The largest policy file read: a policy is a few rules, not data. */
#define CLI_POLICY_MAX_BYTES ((size_t)1 << 20)

/* Owned strings, freed together, and the egress part of a policy as the
 * CLI collects it: the types airlockd's request parser uses too (scalars 0
 * or NULL when not given, so al_policy_init's defaults stay). */
typedef svc_strings cli_strings;
typedef svc_egress_rules cli_egress;

/* A parsed policy file. Numbers are 0 when not given. */
typedef struct cli_policy {
    cli_strings strings;                 /* owns cwd and the env entries */
    bool has_isolation;
    al_isolation isolation;              /* NATIVE or GVISOR */
    uint64_t timeout_ms, cpu_time_ms, memory_bytes, max_processes, max_open_files;
    uint64_t max_file_size, tmpfs_bytes;
    const char *cwd;
    const char **env;                    /* "KEY=VALUE" */
    size_t nenv;
    run_dir *dirs;                       /* each spec_copy owned (NULL once moved) */
    size_t ndirs;
    cli_egress egress;
} cli_policy;

/* If argv[*i] is an egress option ("--NAME VALUE" or "--NAME=VALUE"), check
 * its value and add it to e, advancing *i past a separate value. Returns
 * CLI_OK; CLI_USAGE after printing one line ("airlock exec: ..."); CLI_FAIL
 * when out of memory; or CLI_NOT_POLICY_OPTION, having done nothing. */
int cli_egress_option(int argc, char **argv, int *i, cli_egress *e);

/* The option name when word is an `airlock exec`-only egress option or
 * --policy (bare or "=VALUE"), else NULL: `run` and `python` use it to say
 * why they refuse it. */
const char *cli_exec_only_option(const char *word);

/* Does e grant or configure anything? */
bool cli_egress_given(const cli_egress *e);

/* Append over's lists to base's and let over's given scalars replace base's;
 * over's strings move to base and over is left empty. False when out of
 * memory (both then stay valid for their _free). */
bool cli_egress_merge(cli_egress *base, cli_egress *over);

/* Point out at e's rules (borrowed) and set the limits e gives. */
void cli_egress_fill(const cli_egress *e, al_egress *out);

void cli_egress_free(cli_egress *e);

/* Parse a policy document from json[0..len) (not NUL-terminated). On failure
 * returns false with a one-line reason in err (e.g. `unknown field
 * "egress.foo"`, `egress.allow_ports[1]: expected an integer 1..65535`) and
 * *out empty. cli_policy_free is safe either way. */
bool cli_policy_parse(const char *json, size_t len, cli_policy *out, char *err, size_t errlen);

/* Read path (at most CLI_POLICY_MAX_BYTES) and parse it. */
bool cli_policy_load(const char *path, cli_policy *out, char *err, size_t errlen);

void cli_policy_free(cli_policy *p);

#endif
