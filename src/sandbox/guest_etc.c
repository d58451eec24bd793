/*
 * guest_etc.c — the guest's /etc: its own identity and name service, the
 * same for the native and the gVisor backend (native/mount.c writes these
 * into the sandbox's root tmpfs, gvisor/rootfs.c into the shared rootfs).
 * Nothing of the host's accounts or secrets: no shadow, gshadow, sudoers,
 * ssh keys or machine-id. The sandboxed program runs as "sandbox",
 * SANDBOX_GUEST_UID/GID.
 */
#include "sandbox.h"

const sandbox_etc_file sandbox_guest_etc[] = {
    {"etc/passwd", "root:x:0:0:root:/root:/usr/sbin/nologin\n"
                   "sandbox:x:1000:1000:sandbox:/tmp:/bin/sh\n"
                   "nobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin\n"},
    {"etc/group", "root:x:0:\nsandbox:x:1000:\nnogroup:x:65534:\n"},
    {"etc/hosts", "127.0.0.1\tlocalhost airlock\n::1\tlocalhost ip6-localhost ip6-loopback\n"},
    {"etc/hostname", "airlock\n"},
    {"etc/nsswitch.conf", "passwd: files\ngroup: files\nshadow: files\nhosts: files\n"
                          "networks: files\nprotocols: files\nservices: files\n"
                          "ethers: files\nrpc: files\nnetgroup: files\n"},
    {"etc/resolv.conf", ""},
    {NULL, NULL},
};
