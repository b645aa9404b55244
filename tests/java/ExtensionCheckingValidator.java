import java.io.IOException;

import javax.security.auth.callback.Callback;
import javax.security.auth.callback.UnsupportedCallbackException;

import org.apache.kafka.common.security.oauthbearer.OAuthBearerExtensionsValidatorCallback;
import org.apache.kafka.common.security.oauthbearer.OAuthBearerValidatorCallbackHandler;

/**
 * Apache Kafka's OAUTHBEARER validator (tokens checked against the JWKS), which also requires
 * the SASL extension logicalCluster to equal the system property strait.test.logicalCluster and
 * identityPoolId to be present, as Confluent Cloud requires both. A client that does not send
 * them fails authentication: the tests prove strait's extensions reach the broker.
 */
public class ExtensionCheckingValidator extends OAuthBearerValidatorCallbackHandler {
    @Override
    public void handle(Callback[] callbacks) throws IOException, UnsupportedCallbackException {
        for (Callback callback : callbacks) {
            if (callback instanceof OAuthBearerExtensionsValidatorCallback) {
                OAuthBearerExtensionsValidatorCallback c = (OAuthBearerExtensionsValidatorCallback) callback;
                String want = System.getProperty("strait.test.logicalCluster");
                String got = c.inputExtensions().map().get("logicalCluster");
                if (want != null && !want.equals(got)) {
                    c.error("logicalCluster", "expected " + want + ", got " + got);
                } else if (c.inputExtensions().map().get("identityPoolId") == null) {
                    c.error("identityPoolId", "missing");
                } else {
                    for (String name : c.inputExtensions().map().keySet()) {
                        c.valid(name);
                    }
                }
            } else {
                super.handle(new Callback[] {callback});
            }
        }
    }
}
