#define _GNU_SOURCE
#include <unistd.h>
#include "cshims.h"

int plistsync_syncfs(int fd) {
    return syncfs(fd);
}
