#ifndef PLISTSYNC_CSHIMS_H
#define PLISTSYNC_CSHIMS_H

/// syncfs(2): flushes every dirty page of the file system holding `fd`, in one call. Glibc
/// declares it only under _GNU_SOURCE, which Swift's Glibc module does not set.
int plistsync_syncfs(int fd);

/// renameat2(2) with RENAME_EXCHANGE: swaps the two paths atomically (both must exist).
/// -1 with errno EINVAL or ENOSYS where the file system or kernel cannot.
int plistsync_rename_exchange(const char *from, const char *to);

/// renameat2(2) with RENAME_NOREPLACE: renames unless `to` exists (then -1, errno EEXIST).
int plistsync_rename_noreplace(const char *from, const char *to);

/// malloc_trim(3): gives the allocator's free memory back to the system (malloc.h is not in
/// Swift's Glibc module).
void plistsync_malloc_trim(void);

#endif
