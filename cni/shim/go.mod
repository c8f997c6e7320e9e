module netlease/cni-shim

go 1.22
