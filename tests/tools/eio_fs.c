// tests/tools/eio_fs.c: a FUSE file system whose reads fail with EIO where we say (issue #27).
//
//     ringload_eio_fs SOURCE BAD_OFFSET BAD_LENGTH MOUNTPOINT
//
// Shows one read-only file, named as SOURCE's base name, holding SOURCE's bytes; every read that
// touches [BAD_OFFSET, BAD_OFFSET + BAD_LENGTH) fails with EIO, as a disk's bad sector would.
// The kernel returns that EIO to read(2), preadv and io_uring alike: an honest disk fault where
// no device-mapper driver is available. Direct I/O mode (no page cache) so that every read of
// the file reaches us. Runs in the foreground until unmounted (fusermount3 -u / umount).
// C, not C++: libfuse's high-level API is a C API and this tool is a test fixture, not ringload.
#define FUSE_USE_VERSION 31
#include <errno.h>
#include <fcntl.h>
#include <fuse.h>
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static const char* source_path;
static char shown_name[256 + 1];
static off_t bad_offset;
static off_t bad_length;
static int source_fd = -1;

static int is_shown(const char* path) {
    return path[0] == '/' && strcmp(path + 1, shown_name) == 0;
}

static int eio_getattr(const char* path, struct stat* st, struct fuse_file_info* fi) {
    (void)fi;
    memset(st, 0, sizeof *st);
    if (strcmp(path, "/") == 0) {
        st->st_mode = S_IFDIR | 0755;
        st->st_nlink = 2;
        return 0;
    }
    if (!is_shown(path)) {
        return -ENOENT;
    }
    struct stat source;
    if (fstat(source_fd, &source) != 0) {
        return -errno;
    }
    st->st_mode = S_IFREG | 0444;
    st->st_nlink = 1;
    st->st_size = source.st_size;
    st->st_blksize = 4096;
    return 0;
}

static int eio_readdir(const char* path, void* buf, fuse_fill_dir_t fill, off_t offset, struct fuse_file_info* fi,
                       enum fuse_readdir_flags flags) {
    (void)offset, (void)fi, (void)flags;
    if (strcmp(path, "/") != 0) {
        return -ENOENT;
    }
    fill(buf, ".", NULL, 0, 0);
    fill(buf, "..", NULL, 0, 0);
    fill(buf, shown_name, NULL, 0, 0);
    return 0;
}

static int eio_open(const char* path, struct fuse_file_info* fi) {
    if (!is_shown(path)) {
        return -ENOENT;
    }
    if ((fi->flags & O_ACCMODE) != O_RDONLY) {
        return -EROFS;
    }
    fi->direct_io = 1; // no page cache: each read of the file comes here
    return 0;
}

static int eio_read(const char* path, char* buf, size_t size, off_t offset, struct fuse_file_info* fi) {
    (void)path, (void)fi;
    if (offset < bad_offset + bad_length && offset + (off_t)size > bad_offset) {
        return -EIO;
    }
    const ssize_t got = pread(source_fd, buf, size, offset);
    return got < 0 ? -errno : (int)got;
}

static const struct fuse_operations operations = {
    .getattr = eio_getattr,
    .readdir = eio_readdir,
    .open = eio_open,
    .read = eio_read,
};

int main(int argc, char** argv) {
    if (argc != 5) {
        fprintf(stderr, "usage: %s SOURCE BAD_OFFSET BAD_LENGTH MOUNTPOINT\n", argv[0]);
        return 2;
    }
    source_path = argv[1];
    bad_offset = strtoll(argv[2], NULL, 0);
    bad_length = strtoll(argv[3], NULL, 0);
    source_fd = open(source_path, O_RDONLY | O_CLOEXEC);
    if (source_fd < 0) {
        perror(source_path);
        return 1;
    }
    char copy[4096];
    snprintf(copy, sizeof copy, "%s", source_path);
    snprintf(shown_name, sizeof shown_name, "%s", basename(copy));
    // Foreground, single-threaded, read-only.
    char* fuse_argv[] = {argv[0], "-f", "-s", "-o", "ro,default_permissions,fsname=ringload_eio", argv[4], NULL};
    return fuse_main(6, fuse_argv, &operations, NULL);
}
