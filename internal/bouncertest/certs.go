package bouncertest

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"time"
)

// Cert names the files of a certificate and its key, as a URL's sslcert
// and sslkey name a client's.
type Cert struct {
	CertFile, KeyFile string
}

// certAuthority is a CA of a test's own, that signs the bouncer's server
// certificate and its clients'.
type certAuthority struct {
	dir  string
	cert *x509.Certificate
	key  *ecdsa.PrivateKey
	// file is the CA's certificate, as the bouncer's client_tls_ca_file
	// and a client's sslrootcert.
	file string
	n    int64
}

// newCertAuthority makes a CA in dir.
func newCertAuthority(dir string) (*certAuthority, error) {
	ca := &certAuthority{dir: dir}
	tmpl := &x509.Certificate{
		Subject:               pkix.Name{CommonName: "bouncertest CA"},
		IsCA:                  true,
		BasicConstraintsValid: true,
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
	}
	var err error
	if ca.cert, ca.key, err = ca.sign(tmpl, nil, nil); err != nil {
		return nil, err
	}
	ca.file = filepath.Join(dir, "ca.pem")
	return ca, writePEM(ca.file, "CERTIFICATE", ca.cert.Raw)
}

// issue signs a certificate for name (a user, or the server's address)
// and writes it and its key as name.pem and name.key.
func (ca *certAuthority) issue(name string, server bool) (Cert, error) {
	tmpl := &x509.Certificate{Subject: pkix.Name{CommonName: name}, KeyUsage: x509.KeyUsageDigitalSignature}
	if server {
		tmpl.IPAddresses = []net.IP{net.ParseIP(name)}
		tmpl.ExtKeyUsage = []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}
	} else {
		tmpl.ExtKeyUsage = []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}
	}
	cert, key, err := ca.sign(tmpl, ca.cert, ca.key)
	if err != nil {
		return Cert{}, err
	}
	ca.n++
	base := filepath.Join(ca.dir, fmt.Sprintf("%s-%d", name, ca.n))
	der, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return Cert{}, err
	}
	out := Cert{CertFile: base + ".pem", KeyFile: base + ".key"}
	if err := writePEM(out.CertFile, "CERTIFICATE", cert.Raw); err != nil {
		return Cert{}, err
	}
	return out, writePEM(out.KeyFile, "PRIVATE KEY", der)
}

// sign makes a key and a certificate of tmpl for it, signed by parent's
// key, or by its own when parent is nil.
func (ca *certAuthority) sign(tmpl, parent *x509.Certificate, parentKey *ecdsa.PrivateKey) (*x509.Certificate, *ecdsa.PrivateKey, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, err
	}
	serial, err := rand.Int(rand.Reader, big.NewInt(1<<62))
	if err != nil {
		return nil, nil, err
	}
	tmpl.SerialNumber = serial
	tmpl.NotBefore, tmpl.NotAfter = time.Now().Add(-time.Hour), time.Now().Add(24*time.Hour)
	if parent == nil {
		parent, parentKey = tmpl, key
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, parent, &key.PublicKey, parentKey)
	if err != nil {
		return nil, nil, err
	}
	cert, err := x509.ParseCertificate(der)
	return cert, key, err
}

// writePEM writes one PEM block to path, readable by the user the bouncer
// runs as.
func writePEM(path, kind string, der []byte) error {
	if err := os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: kind, Bytes: der}), 0o644); err != nil {
		return err
	}
	return os.Chmod(path, 0o644)
}
