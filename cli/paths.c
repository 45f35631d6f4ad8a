/* paths.c - the files of a command: an output must not be one of its
 * inputs nor another of its outputs (writing it would destroy the input
 * or the other output). Files are compared by what they are, not by how
 * they are written: an existing file by device and inode (so "../x",
 * "./x" and a symlink to x are x), a new one by the real path of its
 * folder and its name. Devices and pipes (/dev/null, /dev/stdout) are
 * left out: writing one twice destroys nothing. */
/* realpath (XSI) */
#define _XOPEN_SOURCE 700

#include "cli.h"

#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

typedef struct cli_file {
    const char *path, *what;  /* as given; "-o", "--dot", "the input" */
    int output;
    int kind;                 /* 0: not compared, 1: exists, 2: new */
    dev_t dev;
    ino_t ino;
    char *real;               /* kind 2: realpath(folder) + "/" + name */
} cli_file;

/* What path is: an existing regular file (dev, ino), a new file (the
 * real path of its folder and its name), or nothing to compare. */
static void identify(cli_file *f)
{
    struct stat sb;
    f->kind = 0;
    f->real = NULL;
    if (stat(f->path, &sb) == 0) {
        if (S_ISREG(sb.st_mode)) {
            f->kind = 1;
            f->dev = sb.st_dev;
            f->ino = sb.st_ino;
        }
        return;
    }
    const char *slash = strrchr(f->path, '/');
    const char *name = slash ? slash + 1 : f->path;
    char dir[PATH_MAX];
    if (!slash)
        snprintf(dir, sizeof dir, ".");
    else if (slash == f->path)
        snprintf(dir, sizeof dir, "/");
    else
        snprintf(dir, sizeof dir, "%.*s", (int)(slash - f->path), f->path);
    char *real = realpath(dir, NULL);
    if (!real)
        return;   /* no such folder: the write says so */
    size_t n = strlen(real) + strlen(name) + 2;
    f->real = malloc(n);
    if (f->real) {
        snprintf(f->real, n, "%s/%s", real, name);
        f->kind = 2;
    }
    free(real);
}

static int same(const cli_file *a, const cli_file *b)
{
    if (a->kind == 1 && b->kind == 1)
        return a->dev == b->dev && a->ino == b->ino;
    if (a->kind == 2 && b->kind == 2)
        return strcmp(a->real, b->real) == 0;
    return 0;
}

#define MAX_FILES (CLI_MAX_POSITIONAL + 12)

static void add(cli_file *v, size_t *n, const char *path, const char *what,
                int output)
{
    if (!path || !*path || *n >= MAX_FILES)
        return;
    v[*n].path = path;
    v[*n].what = what;
    v[*n].output = output;
    (*n)++;
}

int cli_check_paths(const cli_args *a)
{
    cli_file v[MAX_FILES];
    size_t n = 0;
    char dump_txt[PATH_MAX + 16], dump_bin[PATH_MAX + 16];
    char w_txt[PATH_MAX + 16], w_bin[PATH_MAX + 16];
    char i_txt[PATH_MAX + 16], i_bin[PATH_MAX + 16];
    for (int i = 0; i < a->n_pos; i++)
        add(v, &n, a->pos[i], "the input", 0);
    if (a->cmd == CLI_CMD_VALIDATE)
        add(v, &n, a->plan, "the plan (--plan)", 0);
    if (a->offload.device && strchr(a->offload.device, '.'))
        add(v, &n, a->offload.device, "the device profile (--device)", 0);
    add(v, &n, a->output, "the output -o", 1);
    add(v, &n, a->dot, "the output --dot", 1);
    add(v, &n, a->html, "the output --html", 1);
    add(v, &n, a->trace, "the output --trace", 1);
    add(v, &n, a->memory_viz, "the output --memory-viz", 1);
    if (a->weights_dir) {
        snprintf(w_txt, sizeof w_txt, "%s/values.txt", a->weights_dir);
        snprintf(w_bin, sizeof w_bin, "%s/values.bin", a->weights_dir);
        add(v, &n, w_txt, "the weights (--weights)", 0);
        add(v, &n, w_bin, "the weights (--weights)", 0);
    }
    if (a->inputs_dir) {
        snprintf(i_txt, sizeof i_txt, "%s/values.txt", a->inputs_dir);
        snprintf(i_bin, sizeof i_bin, "%s/values.bin", a->inputs_dir);
        add(v, &n, i_txt, "the inputs (--inputs)", 0);
        add(v, &n, i_bin, "the inputs (--inputs)", 0);
    }
    if (a->dump) {
        snprintf(dump_txt, sizeof dump_txt, "%s/values.txt", a->dump);
        snprintf(dump_bin, sizeof dump_bin, "%s/values.bin", a->dump);
        add(v, &n, dump_txt, "the output --dump", 1);
        add(v, &n, dump_bin, "the output --dump", 1);
    }
    int rc = 0;
    for (size_t i = 0; i < n; i++)
        identify(&v[i]);
    for (size_t i = 0; i < n && !rc; i++) {
        if (!v[i].output || !v[i].kind)
            continue;
        for (size_t j = 0; j < n && !rc; j++) {
            if (j == i || (v[j].output && j > i) || !same(&v[i], &v[j]))
                continue;
            if (v[j].output)
                cli_error("%s: %s %s and %s %s are the same file; give "
                          "each output a file of its own",
                          cli_commands[a->cmd].name, v[j].what, v[j].path,
                          v[i].what, v[i].path);
            else
                cli_error("%s: %s %s is %s %s; writing it would destroy "
                          "the input: give another file",
                          cli_commands[a->cmd].name, v[i].what, v[i].path,
                          v[j].what, v[j].path);
            rc = CLI_EXIT_USAGE;
        }
    }
    for (size_t i = 0; i < n; i++)
        free(v[i].real);
    return rc;
}
