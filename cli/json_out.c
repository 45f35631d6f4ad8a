/* json_out.c - the shape every --json output shares: its schema version,
 * and on failure an "error" object (docs/json-schema.md).
 *
 * The bottom file of the command: cli_error and cli_fail (report.c) note
 * each failure here, cli_json_print (report.c) writes the error member
 * into an output printed after a failure (an infeasible budget, a
 * capacity a packing misses), and cli_run_command (args.c) prints an
 * object of its own, {"schema", "command", "error"}, when a --json run
 * fails before printing one. The message also goes to standard error, as
 * without --json. */
#include "cli.h"

#include <string.h>

static struct {
    int on;              /* --json on the command line */
    int printed;         /* an object was printed on stdout */
    const char *command;
    char message[1024];  /* the first error's message */
    char status_message[1024];
    const char *code;    /* the library status's name, or NULL */
    int exit_code;       /* with code: the exit code of that status */
} J;

/* The status name of an exit code found by the command itself (exit 2 is
 * the command line: an argument the command or library rejects). */
static const char *code_of_exit(int rc)
{
    static const char *const names[] = {
        [CLI_EXIT_OK] = "MP_OK",
        [CLI_EXIT_INTERNAL] = "MP_ERR_INTERNAL",
        [CLI_EXIT_USAGE] = "MP_ERR_INVALID_ARG",
        [CLI_EXIT_INPUT] = "MP_ERR_IO",
        [CLI_EXIT_INFEASIBLE] = "MP_ERR_INFEASIBLE",
        [CLI_EXIT_VERIFY] = "MP_ERR_VERIFY",
        [CLI_EXIT_CORRUPT] = "MP_ERR_CORRUPT",
        [CLI_EXIT_CYCLE] = "MP_ERR_CYCLE",
        [CLI_EXIT_NO_PRODUCER] = "MP_ERR_NO_PRODUCER",
        [CLI_EXIT_DUPLICATE] = "MP_ERR_DUPLICATE",
        [CLI_EXIT_UNKNOWN_OP] = "MP_ERR_UNKNOWN_OP",
        [CLI_EXIT_BAD_DIM] = "MP_ERR_BAD_DIM",
        [CLI_EXIT_OVERFLOW] = "MP_ERR_OVERFLOW",
    };
    if (rc < 0 || (size_t)rc >= sizeof names / sizeof names[0] || !names[rc])
        return "MP_ERR_INTERNAL";
    return names[rc];
}

void cli_json_errors_begin(const char *command, int argc, char *const *argv)
{
    memset(&J, 0, sizeof J);
    J.command = command;
    for (int i = 1; i < argc && strcmp(argv[i], "--") != 0; i++)
        if (strcmp(argv[i], "--json") == 0)
            J.on = 1;
}

void cli_json_note_error(const char *msg)
{
    if (!J.message[0])
        snprintf(J.message, sizeof J.message, "%s", msg);
    snprintf(J.status_message, sizeof J.status_message, "%s", msg);
}

void cli_json_note_status(mp_status st, int exit_code)
{
    if (J.code)
        return;
    J.code = mp_status_name(st);
    J.exit_code = exit_code;
    memcpy(J.message, J.status_message, sizeof J.message);
}

const char *cli_json_command(void)
{
    return J.command ? J.command : "";
}

void cli_json_note_printed(void)
{
    J.printed = 1;
}

/* "error": {"code", "message", "exit_code"} for exit code rc */
static void error_member(mp__jw *w, int rc)
{
    mp__jw_key(w, "error");
    mp__jw_object(w, true);
    mp__jw_key(w, "code");
    mp__jw_string(w, J.code && J.exit_code == rc ? J.code : code_of_exit(rc));
    mp__jw_key(w, "message");
    mp__jw_string(w, J.message);
    mp__jw_key(w, "exit_code");
    mp__jw_i64(w, rc);
    mp__jw_end(w);
}

void cli_json_error_member(mp__jw *w)
{
    if (J.code)
        error_member(w, J.exit_code);
}

int cli_json_errors_end(int rc)
{
    if (!J.on || rc == CLI_EXIT_OK || J.printed)
        return rc;
    mp_ctx *ctx = mp_ctx_create(NULL);
    if (!ctx)
        return rc;
    mp__jw w;
    mp__jw_init(&w, ctx, MP__JW_UPPER, 0);
    mp__jw_object(&w, true);
    mp__jw_key(&w, "schema");
    mp__jw_i64(&w, CLI_JSON_SCHEMA);
    mp__jw_key(&w, "command");
    mp__jw_string(&w, cli_json_command());
    error_member(&w, rc);
    mp__jw_end(&w);
    char *s = NULL;
    size_t len = 0;
    if (mp__jw_done(&w, &s, &len) == MP_OK) {
        fwrite(s, 1, len, stdout);
        fputc('\n', stdout);
        fflush(stdout);
        mp_free(ctx, s);
    }
    mp_ctx_destroy(ctx);
    return rc;
}
