#!/bin/sh
# /usr/local/sbin/nowait-deb-check in the test image of harness/deb-check.sh,
# run by nowait-deb-check.service at the end of the boot. It prints what it
# finds as "deb-check: KEY VALUE" lines and JSON between markers on the
# serial console; the host judges them. The phase is in
# /var/lib/nowait-deb-check/phase (the host writes 1; grub boots the disk,
# so the kernel's command line is the image's own). Phase 1: the nowait
# kernel, the probe, nowait-serve through systemd, the library, then apt
# remove of the nowait kernel. Phase 2: the kernel grub boots after that.
state=/var/lib/nowait-deb-check/phase
phase=$(cat $state)
say() { echo "deb-check: $*"; }
say "phase $phase at $(cut -d' ' -f1 /proc/uptime) s"
say "cmdline $(cat /proc/cmdline)"
say "uname $(uname -r)"
say "init $(cat /proc/1/comm)"
# The boot is over once every other unit has started (this unit is Type=exec).
say "system $(timeout 300 systemctl is-system-running --wait)"
systemctl --failed --no-legend --plain | sed 's/^/deb-check: failed-unit /'
say "kernels in /boot: $(ls /boot | tr '\n' ' ')"

# The probe, on the root's ext4 and on tmpfs, as a user would run it.
mkdir -p /var/tmp/probe
nowait-probe --json /tmp/probe.json ext4=/var/tmp/probe tmpfs=/dev/shm
say "probe-rc $?"
# On one line, so that no console message of the boot lands inside it.
echo "nowait-json: begin probe"
tr -d '\n' </tmp/probe.json
echo
echo "nowait-json: end"

if [ "$phase" = 1 ]; then
	# nowait-serve as packaged: its unit, its /etc/default (root
	# /srv/nowait-serve, 127.0.0.1:8443) and ssl-cert's snakeoil pair,
	# made again here by Debian's make-ssl-cert for this host's name.
	make-ssl-cert generate-default-snakeoil --force-overwrite
	say "snakeoil $?"
	systemctl start nowait-serve
	say "serve-start $?"
	i=0
	until status=$(curl -sS -o /tmp/got -w '%{http_code}' --cacert /etc/ssl/certs/ssl-cert-snakeoil.pem \
		--resolve "$(cat /etc/hostname):8443:127.0.0.1" "https://$(cat /etc/hostname):8443/hello.bin"); do
		i=$((i + 1))
		[ $i -lt 30 ] || break
		sleep 1
	done
	say "curl-tries $i"
	say "curl-status $status"
	[ "$status" = 200 ] || say "curl-body $(head -c 300 /tmp/got | tr '\n' ' ')"
	say "served-sha256 $(sha256sum </tmp/got | cut -d' ' -f1)"
	say "serve-user $(ps -o user:32= -C nowait-serve | head -1)"
	say "serve-caps $(grep CapEff /proc/$(pgrep -o nowait-serve)/status | cut -f2)"
	say "serve-exposure $(systemd-analyze security --no-pager nowait-serve.service | tail -1)"
	systemctl stop nowait-serve
	journalctl -u nowait-serve --no-pager -o cat | sed 's/^/deb-check: serve-journal /'

	# The library: pkg-config and the packaged example, built and run.
	say "pkg-config-libs $(pkg-config --libs nowait)"
	gcc -o /tmp/nowait-sum /usr/share/doc/libnowait-dev/examples/nowait-sum.c \
		$(pkg-config --cflags --libs nowait)
	say "cc $?"
	say "sum $(/tmp/nowait-sum /srv/nowait-serve/hello.bin | head -1)"
	say "sum-links $(ldd /tmp/nowait-sum | grep -o 'libnowait.so.1 => [^ ]*')"

	# linux-headers, as DKMS uses them: an out-of-tree module builds
	# (kbuild runs the packaged fixdep and modpost) and loads.
	mkdir -p /tmp/mod
	printf '%s\n' '#include <linux/module.h>' \
		'static int __init hello_init(void) { pr_info("nowait-deb-check: module loaded\n"); return 0; }' \
		'static void __exit hello_exit(void) { }' \
		'module_init(hello_init);' 'module_exit(hello_exit);' \
		'MODULE_LICENSE("GPL");' 'MODULE_DESCRIPTION("deb-check'"'"'s out-of-tree module");' >/tmp/mod/hello.c
	echo 'obj-m := hello.o' >/tmp/mod/Kbuild
	make -C "/lib/modules/$(uname -r)/build" M=/tmp/mod modules >/tmp/mod.log 2>&1
	say "module-build $?"
	tail -5 /tmp/mod.log | sed 's/^/deb-check: module-log /'
	say "module-vermagic $(modinfo -F vermagic /tmp/mod/hello.ko | cut -d' ' -f1)"
	insmod /tmp/mod/hello.ko
	say "module-load $?"
	rmmod hello

	# Take the running nowait kernel away, as a user going back would.
	DEBIAN_FRONTEND=noninteractive apt-get remove -y "linux-image-$(uname -r)" "linux-headers-$(uname -r)" >/tmp/remove.log 2>&1
	say "apt-remove $?"
	sed 's/^/deb-check: remove-log /' /tmp/remove.log | tail -60
fi
echo $((phase + 1)) >$state
sync
say "phase $phase done"
systemctl reboot
