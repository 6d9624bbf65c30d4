#ifndef CONTINUUM_CSYNCFS_H
#define CONTINUUM_CSYNCFS_H

// syncfs(2): commits every write of the file system that holds `fd` to disk, in one call. A GNU extension, so the
// Swift Glibc module does not declare it; glibc has had it since 2.14.
int syncfs(int fd);

#endif
