/* help.c - help, usage lines and docs/cli.md's option lists, all written
 * from the table of cli/options.c; and the closest name to a mistyped
 * one (did you mean). */
#include "cli.h"

#include <string.h>

#define WIDTH 79
#define HELP_COL 24 /* where an option's help starts */

/* Writes text word by word from column *col, lines no wider than WIDTH,
 * continuation lines indented by `indent`. A '\n' in text ends a line
 * ("\n\n": an empty line between paragraphs). */
static void wrap(FILE *f, const char *text, int indent, int *col)
{
    int fresh = 1; /* no word on this line yet */
    for (const char *p = text; *p;) {
        if (*p == '\n' || *p == ' ') {
            if (*p++ == '\n') {
                fputc('\n', f);
                *col = 0;
                fresh = 1;
            }
            continue;
        }
        size_t n = strcspn(p, " \n");
        if (!fresh && *col + 1 + (int)n > WIDTH) {
            fputc('\n', f);
            *col = 0;
            fresh = 1;
        }
        if (*col < indent) {
            fprintf(f, "%*s", indent - *col, "");
            *col = indent;
        } else if (!fresh) {
            fputc(' ', f);
            (*col)++;
        }
        fwrite(p, 1, n, f);
        *col += (int)n;
        p += n;
        fresh = 0;
    }
}

/* "[--align N]", "[-o FILE]", "[--dim NAME=VALUE]..." */
static void usage_item(char *buf, size_t cap, const cli_option *o)
{
    char name[48];
    if (o->short_name)
        snprintf(name, sizeof name, "-%c", o->short_name);
    else
        snprintf(name, sizeof name, "--%s", o->name);
    snprintf(buf, cap, "[%s%s%s]%s", name, o->arg ? " " : "",
             o->arg ? o->arg : "", o->repeat ? "..." : "");
}

static void usage_lines(FILE *f, int cmd, const char *prefix)
{
    const cli_command *c = &cli_commands[cmd];
    int col = fprintf(f, "%smemplan %s%s%s", prefix, c->name,
                      *c->args ? " " : "", c->args);
    int indent = (int)(strlen(prefix) + strlen("memplan  ") + strlen(c->name));
    for (int id = 0; id < CLI_O_COUNT_; id++) {
        if (!((cli_options[id].cmds >> cmd) & 1u))
            continue;
        char item[96];
        usage_item(item, sizeof item, &cli_options[id]);
        if (col + 1 + (int)strlen(item) > WIDTH) {
            col = fprintf(f, "\n%*s%s", indent, "", item) - 1;
        } else {
            col += fprintf(f, " %s", item);
        }
    }
    fputc('\n', f);
}

/* The help text of option id for cmd: help, the values the library
 * knows, (repeatable), (default ...). */
static void option_text(char *buf, size_t cap, int id, int cmd)
{
    const cli_option *o = &cli_options[id];
    const char *def = cli_option_def(o, cmd), *note = cli_option_note(o, cmd);
    size_t n = (size_t)snprintf(buf, cap, "%s", cli_option_help(o, cmd));
    if (o->values && n < cap) {
        FILE *m = fmemopen(buf + n, cap - n, "w");
        if (m) {
            fputc(' ', m);
            o->values(m);
            fclose(m);
        }
        n = strlen(buf);
    }
    if (o->repeat && n < cap)
        n += (size_t)snprintf(buf + n, cap - n, " (repeatable)");
    if (def && n < cap)
        snprintf(buf + n, cap - n, " (default %s)", def);
    else if (note && n < cap)
        snprintf(buf + n, cap - n, " (default: %s)", note);
}

/* "-o, --output FILE" or "--align N" */
static void option_name(char *buf, size_t cap, const cli_option *o,
                        const char *code)
{
    char s[8] = "";
    if (o->short_name)
        snprintf(s, sizeof s, "-%c", o->short_name);
    snprintf(buf, cap, "%s%s%s%s%s--%s%s%s%s", *s ? code : "", s,
             *s ? code : "", *s ? ", " : "", code, o->name, o->arg ? " " : "",
             o->arg ? o->arg : "", code);
}

void cli_help(FILE *f, int cmd)
{
    const cli_command *c = &cli_commands[cmd];
    usage_lines(f, cmd, "Usage: ");
    fprintf(f, "       memplan %s --help\n\n", c->name);
    int col = 0;
    wrap(f, c->about, 0, &col);
    fputs("\n", f);
    const char *group = NULL;
    for (int id = 0; id < CLI_O_COUNT_; id++) {
        const cli_option *o = &cli_options[id];
        if (!((o->cmds >> cmd) & 1u))
            continue;
        if (!group || strcmp(group, o->group) != 0)
            fprintf(f, "\n%s:\n", group = o->group);
        char name[96], text[1024];
        option_name(name, sizeof name, o, "");
        option_text(text, sizeof text, id, cmd);
        col = fprintf(f, "  %s%s", o->short_name ? "" : "    ", name);
        if (col + 2 > HELP_COL) {
            fputc('\n', f);
            col = 0;
        }
        wrap(f, text, HELP_COL, &col);
        fputc('\n', f);
    }
    fputs("\n  -h, --help            show this help\n", f);
    if (c->notes) {
        fputc('\n', f);
        col = 0;
        wrap(f, c->notes, 0, &col);
        fputc('\n', f);
    }
    fputs("\nExamples:\n", f);
    for (const char *p = c->examples; *p;) {
        size_t n = strcspn(p, "\n");
        fprintf(f, "  %.*s\n", (int)n, p);
        p += n + (p[n] == '\n');
    }
    fputc('\n', f);
    cli_print_exit_codes(f);
}

/* s with every '|' written '\|' (a Markdown table cell) */
static void md_cell(FILE *f, const char *s)
{
    for (; *s; s++) {
        if (*s == '|')
            fputc('\\', f);
        fputc(*s, f);
    }
}

void cli_help_markdown(FILE *f, int cmd)
{
    fputs("```\n", f);
    usage_lines(f, cmd, "");
    fputs("```\n\n| option | meaning |\n|---|---|\n", f);
    for (int id = 0; id < CLI_O_COUNT_; id++) {
        const cli_option *o = &cli_options[id];
        if (!((o->cmds >> cmd) & 1u))
            continue;
        char name[96], text[1024];
        option_name(name, sizeof name, o, "`");
        option_text(text, sizeof text, id, cmd);
        fputs("| ", f);
        md_cell(f, name);
        fputs(" | ", f);
        md_cell(f, text);
        fputs(" |\n", f);
    }
    fputs("| `-h`, `--help` | show the help |\n", f);
}

void cli_list_commands(FILE *f)
{
    fputs("Commands:\n", f);
    for (int c = 0; c < CLI_CMD_COUNT_; c++)
        fprintf(f, "  %-15s %s\n", cli_commands[c].name,
                cli_commands[c].summary);
}

void cli_help_main(FILE *f)
{
    fputs("Usage: memplan COMMAND [OPTIONS] ARGS...\n"
          "       memplan COMMAND --help\n"
          "       memplan help [--markdown] COMMAND\n"
          "       memplan --version\n"
          "\n"
          "Offline memory planner for computation graphs: works out every\n"
          "tensor's size and lifetime and packs them into one arena.\n"
          "\n",
          f);
    cli_list_commands(f);
    fputs("\n"
          "Examples:\n"
          "  memplan plan examples/resnet50.json -o plan.json\n"
          "  memplan verify examples/resnet50.json plan.json\n"
          "  memplan offsets examples/trace.csv -o placed.csv && memplan verify placed.csv\n"
          "\n"
          "Sizes accept units: B, KiB, MiB, GiB, TiB (1024) and KB, MB, GB, TB\n"
          "(1000), any case, e.g. --align 4KiB.\n"
          "\n",
          f);
    cli_print_exit_codes(f);
}

/* ---- did you mean --------------------------------------------------------- */
#define NAME_MAX_LEN 48

static size_t edit_distance(const char *a, const char *b)
{
    size_t la = strlen(a), lb = strlen(b), row[NAME_MAX_LEN + 1];
    for (size_t j = 0; j <= lb; j++)
        row[j] = j;
    for (size_t i = 1; i <= la; i++) {
        size_t diag = row[0];
        row[0] = i;
        for (size_t j = 1; j <= lb; j++) {
            size_t up = row[j];
            size_t best = diag + (a[i - 1] != b[j - 1]);
            if (up + 1 < best)
                best = up + 1;
            if (row[j - 1] + 1 < best)
                best = row[j - 1] + 1;
            row[j] = best;
            diag = up;
        }
    }
    return row[lb];
}

const char *cli_closest(const char *s, const char *const *names, size_t n)
{
    size_t len = strlen(s);
    if (len == 0 || len > NAME_MAX_LEN)
        return NULL;
    size_t limit = len / 3 > 2 ? len / 3 : 2, best_d = limit + 1;
    const char *best = NULL;
    for (size_t i = 0; i < n; i++) {
        if (strlen(names[i]) > NAME_MAX_LEN)
            continue;
        size_t d = edit_distance(s, names[i]);
        if (d < best_d) {
            best_d = d;
            best = names[i];
        }
    }
    return best;
}
