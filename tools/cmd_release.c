/* SPDX-License-Identifier: MIT */
/* cmd_release.c — `dlock release --force NAME`: deletes a lock whoever holds it
 * (Redisson's forceUnlock), through dlock_lock_force_release().
 *
 * Before, it reads what NAME is (inspect_read.c), so that it never deletes something that
 * is not a lock (a hash of the application's, a semaphore), and so that it releases each
 * kind through its own handle, which wakes that kind's waiters: a fair lock's first
 * waiter on its own channel, a read-write lock's readers and writers on theirs. */
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "inspect.h"

enum { OPT_FORCE = 1 };

static const cli_opt release_opts[] = {
    {"force", 0, false, OPT_FORCE, false},
    {NULL, 0, false, 0, false},
};

static void print_help(void) {
    printf("Usage: dlock release --force NAME\n"
           "\n"
           "Deletes the lock NAME whoever holds it and wakes its waiters (Redisson's\n"
           "forceUnlock) - for an operator, when a holder is stuck. A holder learns of it\n"
           "at its next watchdog renewal: its lease is lost (a 'dlock run' holding NAME\n"
           "terminates its command and exits 75).\n"
           "\n"
           "--force is required: a holder releases its own lock itself ('dlock run' does\n"
           "when its command ends).\n"
           "\n"
           "NAME must be a lock (or nothing): a lock, a fair lock or a read-write lock,\n"
           "whichever it holds; a semaphore, a latch or a key dlock did not make is\n"
           "refused (exit 65) and left alone.\n"
           "\n"
           "Exit status: 0 released, or NAME was not locked (said on stderr); 64 usage;\n"
           "65 not a lock; 69 Redis unavailable; 77 refused (ACL).\n"
           "\n"
           "%s",
           cli_global_help);
}

int cmd_release(int argc, char **argv) {
    bool force = false;
    const char *name = NULL;
    cli_args a;
    cli_args_init(&a, argc, argv, release_opts, false);
    for (;;) {
        int id = cli_next(&a);
        if (id == CLI_ARG_END)
            break;
        switch (id) {
        case CLI_ARG_HELP:
            print_help();
            return CLI_EXIT_OK;
        case CLI_ARG_ERROR:
            return CLI_EXIT_USAGE;
        case CLI_ARG_POSITIONAL:
            if (name)
                return cli_usage_error("one NAME at a time ('%s' and '%s')", name, a.value);
            name = a.value;
            break;
        case OPT_FORCE:
            force = true;
            break;
        default:
            return CLI_EXIT_SOFTWARE;
        }
    }
    if (!name || !name[0])
        return cli_usage_error("no NAME given");
    if (!force)
        return cli_usage_error("releasing a lock someone else holds needs --force");

    /* What is it? Read on the client that releases it: one connection, one node. */
    dlock_client *c = NULL;
    int code = cli_connect(&c);
    if (code != 0)
        return code;
    inspection in;
    code = inspect_read(c, name, -1, &in);
    obj_kind kind = in.kind;
    bool write_mode = in.mode && strcmp(in.mode, "write") == 0;
    char redis_type[sizeof(in.redis_type)], node[sizeof(in.node)];
    memcpy(redis_type, in.redis_type, sizeof(redis_type));
    memcpy(node, in.node, sizeof(node));
    inspection_free(&in);
    if (code == 0 && kind == OBJ_OTHER) {
        cli_error("%s is not a dlock object (Redis %s): left alone", name, redis_type);
        code = CLI_EXIT_DATAERR;
    } else if (code == 0 && kind != OBJ_LOCK && kind != OBJ_NONE && kind != OBJ_FAIR_LOCK &&
               kind != OBJ_RWLOCK) {
        cli_error("%s is a %s, not a lock: left alone", name, obj_kind_title(kind));
        code = CLI_EXIT_DATAERR;
    }
    if (code != 0) {
        dlock_client_free(c);
        return code;
    }

    /* Release it, through the library. */
    dlock_lock *lock = NULL;
    dlock_rwlock *rw = NULL;
    bool was_locked = false;
    int err;
    if (kind == OBJ_RWLOCK) {
        err = dlock_rwlock_new(c, name, &rw);
        if (err == DLOCK_OK)
            lock = write_mode ? dlock_rwlock_write(rw) : dlock_rwlock_read(rw);
    } else if (kind == OBJ_FAIR_LOCK) {
        err = dlock_fairlock_new(c, name, &lock);
    } else {
        err = dlock_lock_new(c, name, &lock);
    }
    if (err == DLOCK_OK)
        err = dlock_lock_force_release(lock, &was_locked);
    if (err != DLOCK_OK)
        code = cli_fail(err, name);
    else if (was_locked)
        printf("%s: released (on %s)\n", name, node);
    else
        cli_error("%s was not locked", name);
    if (rw)
        dlock_rwlock_free(rw);
    else
        dlock_lock_free(lock);
    dlock_client_free(c);
    return code;
}
