#ifndef PLISTSYNC_CSHIMS_H
#define PLISTSYNC_CSHIMS_H

/// syncfs(2): flushes every dirty page of the file system holding `fd`, in one call. Glibc
/// declares it only under _GNU_SOURCE, which Swift's Glibc module does not set.
int plistsync_syncfs(int fd);

#endif
