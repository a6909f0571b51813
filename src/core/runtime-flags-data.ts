/**
 * The data behind src/core/runtime-flags.ts: the releases read and one row per flag and stretch
 * of releases (docs/container-runtimes.md#where-the-table-comes-from). Kept apart from the
 * functions that read it so that each stays a file one can read.
 */
export type RuntimeFlavour = "apptainer" | "singularity";

/** Every release tag read, oldest first (release candidates left out). */
export const RUNTIME_RELEASES: Record<RuntimeFlavour, readonly string[]> = {
  apptainer: [
    "1.0.0",
    "1.0.1",
    "1.0.2",
    "1.0.3",
    "1.1.0",
    "1.1.1",
    "1.1.2",
    "1.1.3",
    "1.1.4",
    "1.1.5",
    "1.1.6",
    "1.1.7",
    "1.1.8",
    "1.1.9",
    "1.2.0",
    "1.2.1",
    "1.2.2",
    "1.2.3",
    "1.2.4",
    "1.2.5",
    "1.3.0",
    "1.3.1",
    "1.3.2",
    "1.3.3",
    "1.3.4",
    "1.3.5",
    "1.3.6",
    "1.4.0",
    "1.4.1",
    "1.4.2",
    "1.4.3",
    "1.4.4",
    "1.4.5",
    "1.5.0",
    "1.5.1",
    "1.5.2",
    "1.5.3",
  ],
  singularity: [
    "3.5.0",
    "3.5.1",
    "3.5.2",
    "3.5.3",
    "3.6.0",
    "3.6.1",
    "3.6.2",
    "3.6.3",
    "3.6.4",
    "3.7.0",
    "3.7.1",
    "3.7.2",
    "3.7.3",
    "3.7.4",
    "3.8.0",
    "3.8.1",
    "3.8.2",
    "3.8.3",
    "3.8.4",
    "3.9.0",
    "3.9.1",
    "3.9.2",
    "3.9.3",
    "3.9.4",
    "3.9.5",
    "3.9.6",
    "3.9.7",
    "3.9.8",
    "3.9.9",
    "3.10.0",
    "3.10.1",
    "3.10.2",
    "3.10.3",
    "3.10.4",
    "3.10.5",
    "3.11.0",
    "3.11.1",
    "3.11.2",
    "3.11.3",
    "3.11.4",
    "3.11.5",
    "4.0.0",
    "4.0.1",
    "4.0.2",
    "4.0.3",
    "4.1.0",
    "4.1.1",
    "4.1.2",
    "4.1.3",
    "4.1.4",
    "4.1.5",
    "4.2.0",
    "4.2.1",
    "4.2.2",
    "4.3.0",
    "4.3.1",
    "4.3.2",
    "4.3.3",
    "4.3.4",
    "4.3.5",
    "4.3.6",
    "4.3.7",
    "4.4.0",
    "4.4.1",
    "4.4.2",
    "4.5.0",
    "4.5.1",
  ],
};

/**
 * One row per flag and stretch of releases over which it stayed the same: flavour, first and
 * last release, the commands (e exec, r run, s instance start, t instance stop), name,
 * shorthand, type, default, usage, and "hidden" or "deprecated:<message>". Generated from the
 * sources as docs/container-runtimes.md#where-the-table-comes-from tells; not edited by hand.
 */
// deno-fmt-ignore
export const RUNTIME_FLAGS_TSV = `
apptainer	1.0.0	1.5.3	ers	add-caps		string		a comma separated capability list to add	
apptainer	1.0.0	1.5.3	t	all	a	bool	false	stop all user's instances	
apptainer	1.0.0	1.5.3	ers	allow-setuid		bool	false	allow setuid binaries in container (root only)	
apptainer	1.0.0	1.1.9	er	app		string		set an application to run inside a container	
apptainer	1.2.0	1.5.3	ers	app		string		set an application to run inside a container	
apptainer	1.0.0	1.5.3	ers	apply-cgroups		string		apply cgroups from file for container processes (root only)	
apptainer	1.4.0	1.5.3	ers	authfile		string		Docker-style authentication file to use for writing/reading OCI registry credentials	
apptainer	1.0.0	1.5.3	ers	bind	B	stringArray	[]	a user-bind path specification.  spec has the format src[:dest[:opts]], where src and dest are outside and inside paths.  If dest is not given, it is set equal to src.  Mount options ('opts') may be specified as 'ro' (read-only) or 'rw' (read/write, which is the default). Multiple bind paths can be given by a comma separated list.	
apptainer	1.1.0	1.5.3	ers	blkio-weight		int	0	Block IO relative weight in range 10-1000, 0 to disable	
apptainer	1.1.0	1.5.3	ers	blkio-weight-device		stringSlice	[]	Device specific block IO relative weight	
apptainer	1.0.0	1.5.3	s	boot		bool	false	execute /sbin/init to boot container (root only)	
apptainer	1.5.0	1.5.3	er	cdi-dirs		stringSlice	[]	comma-separated list of directories in which CDI should look for device definition JSON files. If omitted, default will be: /etc/cdi,/var/run/cdi	
apptainer	1.0.0	1.5.3	ers	cleanenv	e	bool	false	clean environment before running container	
apptainer	1.0.0	1.0.3	ers	compat		bool	false	apply settings for increased OCI/Docker compatibility. Infers --containall, --no-init, --no-umask, --writable-tmpfs.	
apptainer	1.1.0	1.5.3	ers	compat		bool	false	apply settings for increased OCI/Docker compatibility. Infers --containall, --no-init, --no-umask, --no-eval, --writable-tmpfs.	
apptainer	1.0.0	1.5.3	ers	contain	c	bool	false	use minimal /dev and empty other directories (e.g. /tmp and $HOME) instead of sharing filesystems from your host	
apptainer	1.0.0	1.5.3	ers	containall	C	bool	false	contain not only file systems, but also PID, IPC, and environment	
apptainer	1.0.0	1.5.3	ers	containlibs		stringSlice	[]		hidden
apptainer	1.1.0	1.5.3	ers	cpu-shares		int	-1	CPU shares for container	
apptainer	1.1.0	1.5.3	ers	cpus		string		Number of CPUs available to container	
apptainer	1.1.0	1.5.3	ers	cpuset-cpus		string		List of host CPUs available to container	
apptainer	1.1.0	1.5.3	ers	cpuset-mems		string		List of host memory nodes available to container	
apptainer	1.3.0	1.5.3	er	cwd		string		initial working directory for payload process inside the container (synonym for --pwd)	
apptainer	1.5.0	1.5.3	er	device		stringSlice	[]	fully-qualified CDI device name(s). A fully-qualified CDI device name consists of a VENDOR, CLASS, and NAME, which are combined as follows: <VENDOR>/<CLASS>=<NAME> (e.g. vendor.com/device=mydevice). Multiple fully-qualified CDI device names can be given as a comma separated list.	
apptainer	1.0.0	1.0.3	ers	disable-cache		bool	false	dont use cache, and dont create cache	
apptainer	1.1.0	1.5.3	ers	disable-cache		bool	false	do not use or create cache	
apptainer	1.0.0	1.5.3	s	dmtcp-launch		string		checkpoint for dmtcp to save container process state to (experimental)	
apptainer	1.0.0	1.5.3	s	dmtcp-restart		string		checkpoint for dmtcp to use to restart container process (experimental)	
apptainer	1.0.0	1.5.3	ers	dns		string		list of DNS server separated by commas to add in resolv.conf	
apptainer	1.2.0	1.5.3	ers	docker-host		string		specify a custom Docker daemon host	
apptainer	1.0.0	1.5.3	ers	docker-login		bool	false	login to a Docker Repository interactively	
apptainer	1.0.0	1.5.3	ers	docker-password		string		specify a password for docker authentication	hidden
apptainer	1.0.0	1.5.3	ers	docker-username		string		specify a username for docker authentication	hidden
apptainer	1.0.0	1.5.3	ers	drop-caps		string		a comma separated capability list to drop	
apptainer	1.0.0	1.0.1	ers	env		stringSlice	[]	pass environment variable to contained process	
apptainer	1.0.2	1.5.3	ers	env		stringToString	[]	pass environment variable to contained process	
apptainer	1.0.0	1.3.6	ers	env-file		string		pass environment variables from file to contained process	
apptainer	1.4.0	1.5.3	ers	env-file		stringSlice	[]	pass environment variables from file to contained process	
apptainer	1.0.0	1.0.3	ers	fakeroot	f	bool	false	run container in new user namespace as uid 0	
apptainer	1.1.0	1.5.3	ers	fakeroot	f	bool	false	run container with the appearance of running as root	
apptainer	1.0.0	1.5.3	t	force	F	bool	false	force kill instance	
apptainer	1.0.0	1.5.3	ers	fusemount		stringSlice	[]	A FUSE filesystem mount specification of the form '<type>:<fuse command> <mountpoint>' - where <type> is 'container' or 'host', specifying where the mount will be performed ('container-daemon' or 'host-daemon' will run the FUSE process detached). <fuse command> is the path to the FUSE executable, plus options for the mount. <mountpoint> is the location in the container to which the FUSE mount will be attached. E.g. 'container:sshfs 10.0.0.1:/ /sshfs'. Implies --pid.	
apptainer	1.0.0	1.5.3	ers	home	H	string	@HOME@	a home directory specification.  spec can either be a src path or src:dest pair.  src is the source path of the home directory outside the container and dest overrides the home directory within the container.	
apptainer	1.0.0	1.5.3	ers	hostname		string		set container hostname	
apptainer	1.1.0	1.5.3	ers	ignore-fakeroot-command		bool	false	ignore fakeroot command	hidden
apptainer	1.1.0	1.5.3	ers	ignore-subuid		bool	false	ignore entries inside /etc/subuid	hidden
apptainer	1.1.0	1.5.3	ers	ignore-userns		bool	false	ignore user namespaces	hidden
apptainer	1.5.0	1.5.3	ers	intel-hpu		bool	false	enable Intel(R) Gaudi accelerator support while using a minimal /dev	
apptainer	1.0.0	1.5.3	ers	ipc	i	bool	false	run container in a new IPC namespace	
apptainer	1.0.0	1.5.3	ers	keep-privs		bool	false	let root user keep privileges in container (root only)	
apptainer	1.1.0	1.5.3	ers	memory		string		Memory limit in bytes	
apptainer	1.1.0	1.5.3	ers	memory-reservation		string		Memory soft limit in bytes	
apptainer	1.1.0	1.5.3	ers	memory-swap		string		Swap limit, use -1 for unlimited swap	
apptainer	1.0.0	1.5.0	ers	mount		stringArray	[]	a mount specification e.g. 'type=bind,source=/opt,destination=/hostopt'.	
apptainer	1.5.1	1.5.3	ers	mount		stringArray	[]	a mount specification e.g. 'type=bind,source=/opt,destination=/hostopt'.  The 'nonested' flag prevents the mount from being passed to nested containers via APPTAINER_BIND.	
apptainer	1.0.0	1.5.3	ers	net	n	bool	false	run container in a new network namespace (sets up a bridge network interface by default)	
apptainer	1.4.0	1.5.3	ers	netns-path		string		join the network namespace at the specified path (as root, or if permitted in apptainer.conf)	
apptainer	1.0.0	1.1.3	ers	network		string	bridge	specify desired network type separated by commas, each network will bring up a dedicated interface inside container	
apptainer	1.1.4	1.5.3	ers	network		string		specify desired network type separated by commas, each network will bring up a dedicated interface inside container	
apptainer	1.0.0	1.5.3	ers	network-args		stringSlice	[]	specify network arguments to pass to CNI plugins	
apptainer	1.5.0	1.5.3	ers	no-env		stringSlice	[]	list of environment variables to block from import into container from host environment	
apptainer	1.1.0	1.5.3	ers	no-eval		bool	false	do not shell evaluate env vars or OCI container CMD/ENTRYPOINT/ARGS	
apptainer	1.0.0	1.5.3	ers	no-home		bool	false	do NOT mount users home directory if /home is not the current working directory	
apptainer	1.0.0	1.5.3	ers	no-https		bool	false	use http instead of https for docker:// oras:// and library://<hostname>/... URIs	
apptainer	1.0.0	1.5.3	ers	no-init		bool	false	do NOT start shim process with --pid	
apptainer	1.0.0	1.0.3	ers	no-mount		stringSlice	[]	disable one or more mount xxx options set in apptainer.conf	
apptainer	1.1.0	1.1.9	ers	no-mount		stringSlice	[]	disable one or more 'mount xxx' options set in apptainer.conf and/or specify absolute destination path to disable a 'bind path' entry	
apptainer	1.2.0	1.5.3	ers	no-mount		stringSlice	[]	disable one or more 'mount xxx' options set in apptainer.conf and/or specify absolute destination path to disable a bind path entry, or 'bind-paths' to disable all bind path entries.	
apptainer	1.0.0	1.5.3	ers	no-nv		bool	false		hidden
apptainer	1.3.0	1.5.3	er	no-pid		bool	false	do not run container in a new PID namespace	
apptainer	1.0.0	1.4.5	ers	no-privs		bool	false	drop all privileges from root user in container)	
apptainer	1.5.0	1.5.3	ers	no-privs		bool	false	drop all privileges from root user in container	
apptainer	1.0.0	1.5.3	ers	no-rocm		bool	false		hidden
apptainer	1.0.0	1.5.3	ers	no-umask		bool	false	do not propagate umask to the container, set default 0022 umask	
apptainer	1.0.0	1.5.3	ers	nohttps		bool	false	use http instead of https for docker:// oras:// and library://<hostname>/... URIs	deprecated:use --no-https
apptainer	1.0.0	1.5.3	ers	nv		bool	false	enable Nvidia support	
apptainer	1.0.0	1.5.3	ers	nvccli		bool	false	use nvidia-container-cli for GPU setup (experimental)	
apptainer	1.1.0	1.5.3	ers	oom-kill-disable		bool	false	Disable OOM killer	
apptainer	1.0.0	1.5.3	ers	overlay	o	stringSlice	[]	use an overlayFS image for persistent data storage or as read-only layer of container	
apptainer	1.0.0	1.5.3	ers	passphrase		bool	false	prompt for an encryption passphrase	
apptainer	1.0.0	1.5.3	ers	pem-path		string		enter an path to a PEM formatted RSA key for an encrypted container	
apptainer	1.0.0	1.5.3	er	pid	p	bool	false	run container in a new PID namespace	
apptainer	1.0.0	1.5.3	s	pid-file		string		write instance PID to the file with the given name	
apptainer	1.1.0	1.5.3	ers	pids-limit		int	0	Limit number of container PIDs, use -1 for unlimited	
apptainer	1.0.0	1.2.5	er	pwd		string		initial working directory for payload process inside the container	
apptainer	1.3.0	1.5.3	er	pwd		string		initial working directory for payload process inside the container (synonym for --cwd)	hidden
apptainer	1.0.0	1.5.3	ers	rocm		bool	false	enable experimental Rocm support	
apptainer	1.3.1	1.5.3	r	runscript-timeout		string		set the timeout duration for runscript (default 1m)	
apptainer	1.0.0	1.5.3	ers	scratch	S	stringSlice	[]	include a scratch directory within the container that is linked to a temporary dir (use -W to force location)	
apptainer	1.0.0	1.5.3	ers	security		stringSlice	[]	enable security features (SELinux, Apparmor, Seccomp)	
apptainer	1.3.0	1.5.3	er	sharens		bool	false	share the namespace and image with other containers launched from the same parent process	
apptainer	1.0.0	1.5.3	t	signal	s	string		signal sent to the instance	
apptainer	1.0.0	1.5.3	t	timeout	t	int	10	force kill non stopped instances after X seconds	
apptainer	1.0.0	1.5.3	ers	tmpdir		string	@TMPDIR@	specify a temporary directory to use for build	hidden
apptainer	1.2.0	1.2.5	ers	underlay		bool	false	use underlay	
apptainer	1.3.0	1.5.3	ers	underlay		bool	false	use underlay instead of overlay for bind mounts	deprecated:default overlay is preferred
apptainer	1.1.0	1.5.3	ers	unsquash		bool	false	Convert SIF file to temporary sandbox before running	
apptainer	1.0.0	1.5.3	t	user	u	string		if running as root, stop instances belonging to user	
apptainer	1.0.0	1.0.3	ers	userns	u	bool	false	run container in a new user namespace, allowing Apptainer to run completely unprivileged on recent kernels. This disables some features of Apptainer, for example it only works with sandbox images.	
apptainer	1.1.0	1.5.3	ers	userns	u	bool	false	run container in a new user namespace	
apptainer	1.0.0	1.5.3	ers	uts		bool	false	run container in a new UTS namespace	
apptainer	1.0.0	1.2.5	er	vm		bool	false	enable VM support	
apptainer	1.0.0	1.2.5	er	vm-cpu		string	1	number of CPU cores to allocate to Virtual Machine (implies --vm)	
apptainer	1.0.0	1.2.5	er	vm-err		bool	false	enable attaching stderr from VM	
apptainer	1.0.0	1.2.5	er	vm-ip		string	dhcp	IP Address to assign for container usage. Defaults to DHCP within bridge network.	
apptainer	1.0.0	1.2.5	er	vm-ram		string	1024	amount of RAM in MiB to allocate to Virtual Machine (implies --vm)	
apptainer	1.0.0	1.5.3	ers	workdir	W	string		working directory to be used for /tmp, /var/tmp and $HOME (if -c/--contain was also used)	
apptainer	1.0.0	1.5.3	ers	writable	w	bool	false	by default all Apptainer containers are available as read only. This option makes the file system accessible as read/write.	
apptainer	1.0.0	1.5.3	ers	writable-tmpfs		bool	false	makes the file system accessible as read-write with non persistent data (with overlay support only)	
singularity	3.5.0	4.5.1	ers	add-caps		string		a comma separated capability list to add	
singularity	3.5.0	4.5.1	t	all	a	bool	false	stop all user's instances	
singularity	3.5.0	4.5.1	ers	allow-setuid		bool	false	allow setuid binaries in container (root only)	
singularity	3.5.0	3.11.5	er	app		string		set an application to run inside a container	
singularity	4.0.0	4.5.1	ers	app		string		set an application to run inside a container	
singularity	3.5.0	4.5.1	ers	apply-cgroups		string		apply cgroups from file for container processes (root only)	
singularity	4.1.0	4.5.1	ers	authfile		string		Docker-style authentication file to use for writing/reading OCI registry credentials	
singularity	3.5.0	3.11.5	ers	bind	B	stringSlice	[]	a user-bind path specification.  spec has the format src[:dest[:opts]], where src and dest are outside and inside paths.  If dest is not given, it is set equal to src.  Mount options ('opts') may be specified as 'ro' (read-only) or 'rw' (read/write, which is the default). Multiple bind paths can be given by a comma separated list.	
singularity	4.0.0	4.5.1	ers	bind	B	stringSlice	[]	a user-bind path specification. spec has the format src[:dest[:opts]], where src and dest are outside and inside paths. If dest is not given, it is set equal to src. Mount options ('opts') may be specified as 'ro' (read-only) or 'rw' (read/write, which is the default). Multiple bind paths can be given by a comma separated list.	
singularity	3.10.0	4.5.1	ers	blkio-weight		int	0	Block IO relative weight in range 10-1000, 0 to disable	
singularity	3.10.0	4.5.1	ers	blkio-weight-device		stringSlice	[]	Device specific block IO relative weight	
singularity	3.5.0	4.5.1	s	boot		bool	false	execute /sbin/init to boot container (root only)	
singularity	4.0.0	4.5.1	er	cdi-dirs		stringSlice	[]	comma-separated list of directories in which CDI should look for device definition JSON files. If omitted, default will be: /etc/cdi,/var/run/cdi	
singularity	3.5.0	4.5.1	ers	cleanenv	e	bool	false	clean environment before running container	
singularity	3.9.0	3.9.9	ers	compat		bool	false	apply settings for increased OCI/Docker compatibility. Infers --containall, --no-init, --no-umask, --writable-tmpfs.	
singularity	3.10.0	4.5.1	ers	compat		bool	false	apply settings for increased OCI/Docker compatibility. Infers --containall, --no-init, --no-umask, --no-eval, --writable-tmpfs.	
singularity	3.5.0	4.5.1	ers	contain	c	bool	false	use minimal /dev and empty other directories (e.g. /tmp and $HOME) instead of sharing filesystems from your host	
singularity	3.5.0	4.5.1	ers	containall	C	bool	false	contain not only file systems, but also PID, IPC, and environment	
singularity	3.5.0	4.5.1	ers	containlibs		stringSlice	[]		hidden
singularity	3.10.0	4.5.1	ers	cpu-shares		int	-1	CPU shares for container	
singularity	3.10.0	4.5.1	ers	cpus		string		Number of CPUs available to container	
singularity	3.10.0	4.5.1	ers	cpuset-cpus		string		List of host CPUs available to container	
singularity	3.10.0	4.5.1	ers	cpuset-mems		string		List of host memory nodes available to container	
singularity	4.0.0	4.5.1	er	cwd		string		initial working directory for payload process inside the container (synonym for --pwd)	
singularity	4.2.0	4.5.1	ers	data		stringSlice	[]	a data-container bind specification src:dest, where src is the path to the data container, and dest is the destination path in the container. Multiple data container binds can be given as a comma separated list.	
singularity	4.0.0	4.5.1	er	device		stringSlice	[]	fully-qualified CDI device name(s). A fully-qualified CDI device name consists of a VENDOR, CLASS, and NAME, which are combined as follows: <VENDOR>/<CLASS>=<NAME> (e.g. vendor.com/device=mydevice). Multiple fully-qualified CDI device names can be given as a comma separated list.	
singularity	3.5.0	4.5.1	ers	disable-cache		bool	false	dont use cache, and dont create cache	
singularity	3.5.0	4.5.1	ers	dns		string		list of DNS server separated by commas to add in resolv.conf	
singularity	3.11.0	4.5.1	ers	docker-host		string		specify a custom Docker daemon host	
singularity	3.5.0	4.5.1	ers	docker-login		bool	false	login to a Docker Repository interactively	
singularity	3.5.0	4.5.1	ers	docker-password		string		specify a password for docker authentication	hidden
singularity	3.5.0	4.5.1	ers	docker-username		string		specify a username for docker authentication	hidden
singularity	3.5.0	4.5.1	ers	drop-caps		string		a comma separated capability list to drop	
singularity	3.6.0	3.9.7	ers	env		stringSlice	[]	pass environment variable to contained process	
singularity	3.9.8	4.5.1	ers	env		stringToString	[]	pass environment variable to contained process	
singularity	3.6.0	4.1.5	ers	env-file		string		pass environment variables from file to contained process	
singularity	4.2.0	4.5.1	ers	env-file		stringSlice	[]	pass environment variables from file to contained process	
singularity	3.5.0	4.5.1	ers	fakeroot	f	bool	false	run container in new user namespace as uid 0	
singularity	3.5.0	4.5.1	t	force	F	bool	false	force kill instance	
singularity	3.5.0	3.5.3	ers	fusemount		stringSlice	[]	a FUSE filesystem mount specification. Begins with the source of the FUSE driver followed by a colon; currently must be 'container:'.  After the colon is the command to run to implement a libfuse3- based filesystem. The last space- separated part of the string is a mountpoint that will be pre-mounted and replaced with a /dev/fd path to the FUSE file descriptor.  Implies --pid.	hidden
singularity	3.6.0	4.5.1	ers	fusemount		stringSlice	[]	A FUSE filesystem mount specification of the form '<type>:<fuse command> <mountpoint>' - where <type> is 'container' or 'host', specifying where the mount will be performed ('container-daemon' or 'host-daemon' will run the FUSE process detached). <fuse command> is the path to the FUSE executable, plus options for the mount. <mountpoint> is the location in the container to which the FUSE mount will be attached. E.g. 'container:sshfs 10.0.0.1:/ /sshfs'. Implies --pid.	
singularity	3.5.0	3.11.5	ers	home	H	string	@HOME@	a home directory specification.  spec can either be a src path or src:dest pair.  src is the source path of the home directory outside the container and dest overrides the home directory within the container.	
singularity	4.0.0	4.5.1	ers	home	H	string	@HOME@	a home directory specification. spec can either be a src path or src:dest pair. src is the source path of the home directory outside the container and dest overrides the home directory within the container.	
singularity	3.5.0	3.11.1	ers	hostname		string		set container hostname	
singularity	3.11.2	4.5.1	ers	hostname		string		set container hostname. Infers --uts.	
singularity	3.5.0	3.5.3	ers	ipc	i	bool	false	run container in a new IPC namespace	
singularity	3.6.0	3.8.4	er	ipc	i	bool	false	run container in a new IPC namespace	
singularity	3.9.0	4.5.1	ers	ipc	i	bool	false	run container in a new IPC namespace	
singularity	4.1.0	4.5.1	ers	keep-layers		bool	false	Keep layers when creating an OCI-SIF. Do not squash to a single layer.	
singularity	3.5.0	4.5.1	ers	keep-privs		bool	false	let root user keep privileges in container (root only)	
singularity	3.10.0	4.5.1	ers	memory		string		Memory limit in bytes	
singularity	3.10.0	4.5.1	ers	memory-reservation		string		Memory soft limit in bytes	
singularity	3.10.0	4.5.1	ers	memory-swap		string		Swap limit, use -1 for unlimited swap	
singularity	3.9.0	4.5.1	ers	mount		stringSlice	[]	a mount specification e.g. 'type=bind,source=/opt,destination=/hostopt'.	
singularity	3.5.0	4.5.1	ers	net	n	bool	false	run container in a new network namespace (sets up a bridge network interface by default)	
singularity	4.2.0	4.5.1	ers	netns-path		string		join the network namespace at the specified path (as root, or if permitted in singularity.conf)	
singularity	3.5.0	4.5.1	ers	network		string	bridge	specify desired network type separated by commas, each network will bring up a dedicated interface inside container	
singularity	3.5.0	4.5.1	ers	network-args		stringSlice	[]	specify network arguments to pass to CNI plugins	
singularity	4.0.0	4.5.1	ers	no-compat		bool	false	(--oci mode) do not apply settings for increased OCI/Docker compatibility. Emulate native runtime defaults without --contain etc.	
singularity	3.10.0	4.5.1	ers	no-eval		bool	false	do not shell evaluate env vars or OCI container CMD/ENTRYPOINT/ARGS	
singularity	3.5.0	3.6.1	ers	no-home		bool	false	do NOT mount users home directory if home is not the current working directory	
singularity	3.6.2	4.5.1	ers	no-home		bool	false	do NOT mount users home directory if /home is not the current working directory	
singularity	3.9.0	4.5.1	ers	no-https		bool	false	use http instead of https for docker:// oras:// and library://<hostname>/... URIs	
singularity	3.5.0	4.5.1	ers	no-init		bool	false	do NOT start shim process with --pid	
singularity	3.7.0	3.9.9	ers	no-mount		stringSlice	[]	disable one or more mount xxx options set in singularity.conf	
singularity	3.10.0	3.10.5	ers	no-mount		stringSlice	[]	disable one or more 'mount xxx' options set in singularity.conf, specify absolute destination path to disable a 'bind path' entry	
singularity	3.11.0	4.5.1	ers	no-mount		stringSlice	[]	disable one or more 'mount xxx' options set in singularity.conf, specify absolute destination path to disable a bind path entry, or 'bind-paths' to disable all bind path entries.	
singularity	3.5.0	3.5.3	ers	no-nv		bool	false		
singularity	3.6.0	4.5.1	ers	no-nv		bool	false		hidden
singularity	4.0.0	4.5.1	ers	no-oci		bool	false	Launch container with native runtime	
singularity	4.0.0	4.5.1	er	no-pid		bool	false	do not run container in a new PID namespace	
singularity	3.5.0	3.11.5	ers	no-privs		bool	false	drop all privileges from root user in container)	
singularity	4.0.0	4.5.1	ers	no-privs		bool	false	drop all privileges in container (root only in non-OCI mode)	
singularity	3.5.0	4.5.1	ers	no-rocm		bool	false		hidden
singularity	3.11.4	4.5.1	ers	no-setgroups		bool	false	disable setgroups when entering --fakeroot user namespace	
singularity	4.0.0	4.5.1	ers	no-tmp-sandbox		bool	false	Prohibits unpacking of images into temporary sandbox dirs	
singularity	3.7.0	4.5.1	ers	no-umask		bool	false	do not propagate umask to the container, set default 0022 umask	
singularity	3.5.0	3.8.4	ers	nohttps		bool	false	do NOT use HTTPS with the docker:// transport (useful for local docker registries without a certificate)	
singularity	3.9.0	4.5.1	ers	nohttps		bool	false	use http instead of https for docker:// oras:// and library://<hostname>/... URIs	deprecated:use --no-https
singularity	3.5.0	3.8.4	er	nonet		bool	false	disable VM network handling	
singularity	3.5.0	3.8.4	ers	nv		bool	false	enable experimental Nvidia support	
singularity	3.9.0	4.5.1	ers	nv		bool	false	enable Nvidia support	
singularity	3.9.0	4.5.1	ers	nvccli		bool	false	use nvidia-container-cli for GPU setup (experimental)	
singularity	3.11.0	3.11.5	er	oci		bool	false	Launch container with OCI runtime (experimental)	
singularity	4.0.0	4.5.1	ers	oci		bool	false	Launch container with OCI runtime (experimental)	
singularity	3.10.0	4.5.1	ers	oom-kill-disable		bool	false	Disable OOM killer	
singularity	3.5.0	4.5.1	ers	overlay	o	stringSlice	[]	use an overlayFS image for persistent data storage or as read-only layer of container	
singularity	3.5.0	4.5.1	ers	passphrase		bool	false	prompt for an encryption passphrase	
singularity	3.5.0	3.8.4	ers	pem-path		string		enter an path to a PEM formated RSA key for an encrypted container	
singularity	3.9.0	4.5.1	ers	pem-path		string		enter an path to a PEM formatted RSA key for an encrypted container	
singularity	3.5.0	3.5.3	ers	pid	p	bool	false	run container in a new PID namespace	
singularity	3.6.0	4.5.1	er	pid	p	bool	false	run container in a new PID namespace	
singularity	3.5.0	4.5.1	s	pid-file		string		write instance PID to the file with the given name	
singularity	3.10.0	4.5.1	ers	pids-limit		int	0	Limit number of container PIDs, use -1 for unlimited	
singularity	3.11.0	4.5.1	er	proot		string		Bind proot from the host into /.singularity.d/libs	hidden
singularity	3.5.0	3.11.5	er	pwd		string		initial working directory for payload process inside the container	
singularity	4.0.0	4.5.1	er	pwd		string		initial working directory for payload process inside the container (synonym for --cwd)	hidden
singularity	3.5.0	4.5.1	ers	rocm		bool	false	enable experimental Rocm support	
singularity	3.5.0	4.5.1	ers	scratch	S	stringSlice	[]	include a scratch directory within the container that is linked to a temporary dir (use -W to force location)	
singularity	3.5.0	4.5.1	ers	security		stringSlice	[]	enable security features (SELinux, Apparmor, Seccomp)	
singularity	3.10.0	4.0.3	er	sif-fuse		bool	false	attempt FUSE mount of SIF (unprivileged / user namespace only) (experimental)	
singularity	4.1.0	4.5.1	er	sif-fuse		bool	false	attempt FUSE mount of SIF	deprecated:FUSE mounts are now used automatically when kernel mounts are disabled / unavailable.
singularity	3.5.0	4.5.1	t	signal	s	string		signal sent to the instance	
singularity	3.5.0	4.5.1	t	timeout	t	int	10	force kill non stopped instances after X seconds	
singularity	4.1.0	4.5.1	ers	tmp-sandbox		bool	false	Forces unpacking of images into temporary sandbox dirs when a kernel or FUSE mount would otherwise be used.	
singularity	3.5.0	4.5.1	ers	tmpdir		string	@TMPDIR@	specify a temporary directory to use for build	hidden
singularity	3.5.0	4.5.1	t	user	u	string		if running as root, stop instances belonging to user	
singularity	3.5.0	4.5.1	ers	userns	u	bool	false	run container in a new user namespace, allowing Singularity to run completely unprivileged on recent kernels. This disables some features of Singularity, for example it only works with sandbox images.	
singularity	3.5.0	4.5.1	ers	uts		bool	false	run container in a new UTS namespace	
singularity	3.5.0	3.11.5	er	vm		bool	false	enable VM support	
singularity	3.5.0	3.11.5	er	vm-cpu		string	1	number of CPU cores to allocate to Virtual Machine (implies --vm)	
singularity	3.5.0	3.11.5	er	vm-err		bool	false	enable attaching stderr from VM	
singularity	3.5.0	3.11.5	er	vm-ip		string	dhcp	IP Address to assign for container usage. Defaults to DHCP within bridge network.	
singularity	3.5.0	3.11.5	er	vm-ram		string	1024	amount of RAM in MiB to allocate to Virtual Machine (implies --vm)	
singularity	3.5.0	3.11.5	ers	workdir	W	string		working directory to be used for /tmp, /var/tmp and $HOME (if -c/--contain was also used)	
singularity	4.0.0	4.5.1	ers	workdir	W	string		working directory to be used for /tmp and /var/tmp (if -c/--contain was also used)	
singularity	3.5.0	4.5.1	ers	writable	w	bool	false	by default all Singularity containers are available as read only. This option makes the file system accessible as read/write.	
singularity	3.5.0	4.5.1	ers	writable-tmpfs		bool	false	makes the file system accessible as read-write with non persistent data (with overlay support only)	
`;
