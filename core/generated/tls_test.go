package generated

import configv1 "github.com/openshift/api/config/v1"

func configv1TLS() configv1.TLSSecurityProfile {
	return configv1.TLSSecurityProfile{Type: configv1.TLSProfileModernType}
}
