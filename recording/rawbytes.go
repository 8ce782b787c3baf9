package recording

import (
	"encoding/json"
	"unicode/utf8"
)

// Names a target gives itself (a thread's or process's comm, its command
// line, its executable's path) are bytes, not text: Linux takes any byte
// but NUL. encoding/json writes a string that is not valid UTF-8 with
// U+FFFD in place of each bad byte, which loses them. So each such field
// has a sibling "<name>_b64" holding the exact bytes in base64, written
// only when the string is not valid UTF-8 and preferred over the escaped
// string when read: the recording keeps every byte, and a reader that
// knows nothing of the sibling still gets a readable name.

// rawIfInvalid returns s's bytes when s is not valid UTF-8, else nil (the
// sibling field is then left out).
func rawIfInvalid(s string) []byte {
	if utf8.ValidString(s) {
		return nil
	}
	return []byte(s)
}

// rawListIfInvalid returns the bytes of every element of list when any
// is not valid UTF-8, else nil.
func rawListIfInvalid(list []string) [][]byte {
	for _, s := range list {
		if !utf8.ValidString(s) {
			out := make([][]byte, len(list))
			for i, s := range list {
				out[i] = []byte(s)
			}
			return out
		}
	}
	return nil
}

// restoreList returns raw as strings when it is as long as the escaped
// list it stands beside, else the list (a sibling that does not match
// is ignored rather than trusted).
func restoreList(list []string, raw [][]byte) []string {
	if raw == nil || len(raw) != len(list) {
		return list
	}
	out := make([]string, len(raw))
	for i, b := range raw {
		out[i] = string(b)
	}
	return out
}

// procNames are the raw siblings of a process's names.
type procNames struct {
	CommRaw    []byte   `json:"comm_b64,omitempty"`
	CmdlineRaw [][]byte `json:"cmdline_b64,omitempty"`
	ExeRaw     []byte   `json:"exe_b64,omitempty"`
}

func namesOf(comm string, cmdline []string, exe string) procNames {
	return procNames{CommRaw: rawIfInvalid(comm), CmdlineRaw: rawListIfInvalid(cmdline), ExeRaw: rawIfInvalid(exe)}
}

// restore puts the raw bytes back into the names they stand beside.
func (n procNames) restore(comm *string, cmdline *[]string, exe *string) {
	if n.CommRaw != nil {
		*comm = string(n.CommRaw)
	}
	*cmdline = restoreList(*cmdline, n.CmdlineRaw)
	if n.ExeRaw != nil {
		*exe = string(n.ExeRaw)
	}
}

// MarshalJSON writes m with the raw bytes of names that are not valid
// UTF-8 beside them.
func (m Meta) MarshalJSON() ([]byte, error) {
	type plain Meta
	return json.Marshal(struct {
		plain
		procNames
	}{plain(m), namesOf(m.Comm, m.Cmdline, m.Exe)})
}

// UnmarshalJSON reads m, the raw bytes of its names preferred.
func (m *Meta) UnmarshalJSON(b []byte) error {
	type plain Meta
	var v struct {
		plain
		procNames
	}
	if err := json.Unmarshal(b, &v); err != nil {
		return err
	}
	*m = Meta(v.plain)
	v.procNames.restore(&m.Comm, &m.Cmdline, &m.Exe)
	return nil
}

// MarshalJSON writes p with the raw bytes of names that are not valid
// UTF-8 beside them.
func (p Process) MarshalJSON() ([]byte, error) {
	type plain Process
	return json.Marshal(struct {
		plain
		procNames
	}{plain(p), namesOf(p.Comm, p.Cmdline, p.Exe)})
}

// UnmarshalJSON reads p, the raw bytes of its names preferred.
func (p *Process) UnmarshalJSON(b []byte) error {
	type plain Process
	var v struct {
		plain
		procNames
	}
	if err := json.Unmarshal(b, &v); err != nil {
		return err
	}
	*p = Process(v.plain)
	v.procNames.restore(&p.Comm, &p.Cmdline, &p.Exe)
	return nil
}

// MarshalJSON writes s with the raw bytes of its thread name beside it
// when that is not valid UTF-8.
func (s ThreadSeries) MarshalJSON() ([]byte, error) {
	type plain ThreadSeries
	return json.Marshal(struct {
		plain
		CommRaw []byte `json:"comm_b64,omitempty"`
	}{plain(s), rawIfInvalid(s.Comm)})
}

// UnmarshalJSON reads s, the raw bytes of its thread name preferred.
func (s *ThreadSeries) UnmarshalJSON(b []byte) error {
	type plain ThreadSeries
	var v struct {
		plain
		CommRaw []byte `json:"comm_b64,omitempty"`
	}
	if err := json.Unmarshal(b, &v); err != nil {
		return err
	}
	*s = ThreadSeries(v.plain)
	if v.CommRaw != nil {
		s.Comm = string(v.CommRaw)
	}
	return nil
}
