#define _GNU_SOURCE
#include <fcntl.h>
#include <stdio.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <linux/fs.h>
#include <malloc.h>
#include "cshims.h"

int plistsync_syncfs(int fd) {
    return syncfs(fd);
}

static int rename_with_flags(const char *from, const char *to, unsigned int flags) {
    return (int)syscall(SYS_renameat2, AT_FDCWD, from, AT_FDCWD, to, flags);
}

int plistsync_rename_exchange(const char *from, const char *to) {
    return rename_with_flags(from, to, RENAME_EXCHANGE);
}

int plistsync_rename_noreplace(const char *from, const char *to) {
    return rename_with_flags(from, to, RENAME_NOREPLACE);
}

void plistsync_malloc_trim(void) {
    malloc_trim(0);
}
