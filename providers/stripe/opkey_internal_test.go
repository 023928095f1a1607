package stripe

import "testing"

// TestOpKeyOf: the op_key is found under the metadata key in any letter
// case, the exact key first; several other cases are no answer. The value
// is returned as it is, for an exact comparison.
func TestOpKeyOf(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		desc      string
		metadata  map[string]string
		wantValue string
		wantOK    bool
		wantErr   bool
	}{
		{desc: "the exact key", metadata: map[string]string{"op_key": "order-10", "note": "x"}, wantValue: "order-10", wantOK: true},
		{desc: "the exact key before a case variant", metadata: map[string]string{"OP_KEY": "order-11", "op_key": "order-10"}, wantValue: "order-10", wantOK: true},
		{desc: "one case variant", metadata: map[string]string{"OP_KEY": "order-10"}, wantValue: "order-10", wantOK: true},
		{desc: "the value as it is", metadata: map[string]string{"Op_Key": " ORDER-10"}, wantValue: " ORDER-10", wantOK: true},
		{desc: "two case variants", metadata: map[string]string{"OP_KEY": "order-10", "Op_Key": "order-10"}, wantErr: true},
		{desc: "no key", metadata: map[string]string{"op_key_2": "order-10"}},
		{desc: "no metadata", metadata: nil},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			t.Parallel()
			value, ok, err := opKeyOf(tc.metadata, "op_key")
			if (err != nil) != tc.wantErr || value != tc.wantValue || ok != tc.wantOK {
				t.Errorf("opKeyOf = %q, %v, %v; want %q, %v, error %v", value, ok, err, tc.wantValue, tc.wantOK, tc.wantErr)
			}
		})
	}
}
