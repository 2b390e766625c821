# Sourced by start.sh and stop.sh: recognising the processes they started, so that a PID
# that the system has since given to another program is never killed.

# Prints the command line of a live process; nothing for a zombie or a missing PID.
cmdline_of() {
    if [[ -r /proc/$1/cmdline ]]; then
        tr '\0' ' ' <"/proc/$1/cmdline" 2>/dev/null || true
    elif [[ ! -d /proc/self ]]; then
        ps -p "$1" -o command= 2>/dev/null || true
    fi
}

is_ours() { # PID PATTERN
    [[ $1 =~ ^[0-9]+$ ]] && [[ $(cmdline_of "$1") == *"$2"* ]]
}
