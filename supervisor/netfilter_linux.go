package supervisor

import (
	"encoding/binary"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"strconv"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"
	"github.com/cilium/ebpf/link"
	"golang.org/x/sys/unix"
)

// The network filter of 'network: loopback' and 'network: [host:port]'
// (issue 37). The child's processes are put in a cgroup of their own in
// the cgroup v2 hierarchy (a hybrid system such as this one mounts it
// beside v1's controllers), to which the bridge attaches eBPF programs that
// the kernel runs at every connect(2) and UDP sendmsg(2) of a process in
// it: an address that matches no rule gets EPERM. A program attached to a
// cgroup (not through a link) stays attached while the cgroup exists,
// whatever becomes of the bridge, and nothing inside the cgroup can leave
// it without writing to the cgroup file system (which 'files:' denies).
// Raw sockets, which would bypass the hooks, are refused at creation.
//
// The programs are written with cilium/ebpf's assembler (no C compiler at
// build time, no object file to ship): a few instructions per rule.

// bpf_sock_addr's fields the programs read (include/uapi/linux/bpf.h).
const (
	sockAddrIP4  = 4  // user_ip4: the address, in network order
	sockAddrIP6  = 8  // user_ip6[4]
	sockAddrPort = 24 // user_port: the port, in network order
	sockType     = 8  // bpf_sock.type (the socket-creation hook)
)

// filterProgram assembles the program of one hook: allow (1) what matches
// one of rules, deny (0, EPERM) the rest. v6 says the hook is IPv6's: its
// addresses are four words (an IPv4 rule matches their IPv4-mapped form).
func filterProgram(rules []netRule, v6 bool) asm.Instructions {
	var out asm.Instructions
	label := ""
	emit := func(ins asm.Instruction) {
		if label != "" {
			ins = ins.WithSymbol(label)
			label = ""
		}
		out = append(out, ins)
	}
	emit(asm.Mov.Reg(asm.R6, asm.R1))
	for i, r := range rules {
		next := "next" + strconv.Itoa(i)
		words, masks, offset := ruleWords(r.prefix, v6)
		if words == nil {
			continue // an IPv6 rule at the IPv4 hook
		}
		for w := range words {
			if masks[w] == 0 {
				continue
			}
			emit(asm.LoadMem(asm.R2, asm.R6, int16(offset+4*w), asm.Word))
			if masks[w] != 0xffffffff {
				emit(asm.And.Imm32(asm.R2, int32(masks[w])))
			}
			emit(asm.JNE.Imm32(asm.R2, int32(words[w]), next))
		}
		if r.port != 0 {
			emit(asm.LoadMem(asm.R2, asm.R6, sockAddrPort, asm.Word))
			emit(asm.JNE.Imm32(asm.R2, int32(binary.NativeEndian.Uint32([]byte{byte(r.port >> 8), byte(r.port), 0, 0})), next))
		}
		emit(asm.Ja.Label("allow"))
		label = next
	}
	emit(asm.Mov.Imm(asm.R0, 0))
	emit(asm.Return())
	emit(asm.Mov.Imm(asm.R0, 1).WithSymbol("allow"))
	emit(asm.Return())
	return out
}

// ruleWords are the words of prefix as the hook reads its address (in
// memory order), with their masks, and the offset of the first; nil when
// an IPv6 prefix is given to the IPv4 hook.
func ruleWords(prefix netip.Prefix, v6 bool) (words, masks []uint32, offset int) {
	addr, bits := prefix.Addr(), prefix.Bits()
	if addr.Is4() && v6 {
		// ::ffff:a.b.c.d
		addr, bits = netip.AddrFrom16(addr.As16()), bits+96
	}
	if addr.Is6() && !v6 {
		return nil, nil, 0
	}
	raw := addr.AsSlice()
	mask := make([]byte, len(raw))
	for i := 0; i < bits; i++ {
		mask[i/8] |= 0x80 >> (i % 8)
	}
	for i := 0; i < len(raw); i += 4 {
		words = append(words, binary.NativeEndian.Uint32(raw[i:i+4])&binary.NativeEndian.Uint32(mask[i:i+4]))
		masks = append(masks, binary.NativeEndian.Uint32(mask[i:i+4]))
	}
	if v6 {
		return words, masks, sockAddrIP6
	}
	return words, masks, sockAddrIP4
}

// noRawSockets is the socket-creation hook's program: no raw sockets
// (which connect and sendmsg hooks do not see).
func noRawSockets() asm.Instructions {
	return asm.Instructions{
		asm.LoadMem(asm.R2, asm.R1, sockType, asm.Word),
		asm.JEq.Imm32(asm.R2, unix.SOCK_RAW, "deny"),
		asm.Mov.Imm(asm.R0, 1),
		asm.Return(),
		asm.Mov.Imm(asm.R0, 0).WithSymbol("deny"),
		asm.Return(),
	}
}

// attachNetFilter attaches the filter that lets the processes of the
// cgroup v2 directory dir reach only rules.
func attachNetFilter(dir string, rules []netRule) error {
	f, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("cannot open the child's cgroup %s: %w", dir, err)
	}
	defer f.Close()
	hooks := []struct {
		kind   ebpf.ProgramType
		attach ebpf.AttachType
		prog   asm.Instructions
	}{
		{ebpf.CGroupSockAddr, ebpf.AttachCGroupInet4Connect, filterProgram(rules, false)},
		{ebpf.CGroupSockAddr, ebpf.AttachCGroupInet6Connect, filterProgram(rules, true)},
		{ebpf.CGroupSockAddr, ebpf.AttachCGroupUDP4Sendmsg, filterProgram(rules, false)},
		{ebpf.CGroupSockAddr, ebpf.AttachCGroupUDP6Sendmsg, filterProgram(rules, true)},
		{ebpf.CGroupSock, ebpf.AttachCGroupInetSockCreate, noRawSockets()},
	}
	for _, h := range hooks {
		prog, err := ebpf.NewProgramWithOptions(&ebpf.ProgramSpec{
			Name:         "stelae_net",
			Type:         h.kind,
			AttachType:   h.attach,
			Instructions: h.prog,
			License:      "GPL",
		}, ebpf.ProgramOptions{})
		if err != nil {
			return fmt.Errorf("cannot load the network filter (%s): %w", h.attach, explainBPF(err))
		}
		err = link.RawAttachProgram(link.RawAttachProgramOptions{Target: int(f.Fd()), Program: prog, Attach: h.attach})
		prog.Close() // the cgroup holds it now
		if err != nil {
			return fmt.Errorf("cannot attach the network filter (%s) to the child's cgroup %s: %w", h.attach, dir, explainBPF(err))
		}
	}
	return nil
}

// explainBPF adds what to do to an error of the bpf system call.
func explainBPF(err error) error {
	if errors.Is(err, unix.EPERM) || errors.Is(err, unix.EACCES) {
		return fmt.Errorf("%w (loading eBPF programs needs root or CAP_BPF and CAP_NET_ADMIN)", err)
	}
	return err
}
