import java.io.IOException;
import java.net.URI;
import java.net.URLDecoder;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.time.Instant;
import java.time.ZoneOffset;
import java.time.format.DateTimeFormatter;
import java.util.ArrayList;
import java.util.Base64;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;

import javax.crypto.Mac;
import javax.crypto.spec.SecretKeySpec;
import javax.security.auth.callback.Callback;
import javax.security.auth.callback.UnsupportedCallbackException;
import javax.security.auth.login.AppConfigurationEntry;

import org.apache.kafka.common.security.auth.AuthenticateCallbackHandler;
import org.apache.kafka.common.security.oauthbearer.OAuthBearerExtensionsValidatorCallback;
import org.apache.kafka.common.security.oauthbearer.OAuthBearerToken;
import org.apache.kafka.common.security.oauthbearer.OAuthBearerValidatorCallback;

/**
 * Checks an Amazon MSK IAM token the way an MSK broker would, for tests on Apache Kafka: the
 * token is a base64url SigV4-presigned URL of kafka.REGION.amazonaws.com with
 * Action=kafka-cluster:Connect, signed with the access key in the system properties
 * strait.test.awsAccessKey / strait.test.awsSecretKey / strait.test.awsSessionToken for the
 * region strait.test.region, not expired. The signature is recomputed from the canonical
 * request (AWS Signature Version 4). The principal is the access key id.
 */
public class MskIamTokenValidator implements AuthenticateCallbackHandler {
    @Override
    public void configure(Map<String, ?> configs, String mechanism, List<AppConfigurationEntry> entries) {
    }

    @Override
    public void close() {
    }

    @Override
    public void handle(Callback[] callbacks) throws IOException, UnsupportedCallbackException {
        for (Callback callback : callbacks) {
            if (callback instanceof OAuthBearerValidatorCallback) {
                OAuthBearerValidatorCallback c = (OAuthBearerValidatorCallback) callback;
                try {
                    c.token(check(c.tokenValue()));
                } catch (Exception e) {
                    System.err.println("MSK IAM token refused: " + e.getMessage());
                    c.error("invalid_token", null, null);
                }
            } else if (callback instanceof OAuthBearerExtensionsValidatorCallback) {
                OAuthBearerExtensionsValidatorCallback c = (OAuthBearerExtensionsValidatorCallback) callback;
                for (String name : c.inputExtensions().map().keySet()) {
                    c.valid(name);
                }
            } else {
                throw new UnsupportedCallbackException(callback);
            }
        }
    }

    private static String enc(String s) {
        StringBuilder b = new StringBuilder();
        for (byte x : s.getBytes(StandardCharsets.UTF_8)) {
            char ch = (char) (x & 0xff);
            if ((ch >= 'A' && ch <= 'Z') || (ch >= 'a' && ch <= 'z') || (ch >= '0' && ch <= '9')
                    || ch == '-' || ch == '_' || ch == '.' || ch == '~') {
                b.append(ch);
            } else {
                b.append(String.format("%%%02X", x & 0xff));
            }
        }
        return b.toString();
    }

    private static String hex(byte[] b) {
        StringBuilder s = new StringBuilder();
        for (byte x : b) {
            s.append(String.format("%02x", x & 0xff));
        }
        return s.toString();
    }

    private static byte[] hmac(byte[] key, String data) throws Exception {
        Mac mac = Mac.getInstance("HmacSHA256");
        mac.init(new SecretKeySpec(key, "HmacSHA256"));
        return mac.doFinal(data.getBytes(StandardCharsets.UTF_8));
    }

    private static String sha256(String s) throws Exception {
        return hex(MessageDigest.getInstance("SHA-256").digest(s.getBytes(StandardCharsets.UTF_8)));
    }

    private static OAuthBearerToken check(String token) throws Exception {
        String region = System.getProperty("strait.test.region");
        String accessKey = System.getProperty("strait.test.awsAccessKey");
        String secretKey = System.getProperty("strait.test.awsSecretKey");
        String sessionToken = System.getProperty("strait.test.awsSessionToken");
        URI uri = URI.create(new String(Base64.getUrlDecoder().decode(token), StandardCharsets.UTF_8));
        String host = "kafka." + region + ".amazonaws.com";
        if (!"https".equals(uri.getScheme()) || !host.equals(uri.getHost())) {
            throw new Exception("not a URL of " + host + ": " + uri.getHost());
        }
        Map<String, String> q = new TreeMap<>();
        for (String kv : uri.getRawQuery().split("&")) {
            String[] p = kv.split("=", 2);
            q.put(URLDecoder.decode(p[0], StandardCharsets.UTF_8),
                    p.length > 1 ? URLDecoder.decode(p[1], StandardCharsets.UTF_8) : "");
        }
        if (!"kafka-cluster:Connect".equals(q.get("Action"))) throw new Exception("Action " + q.get("Action"));
        if (!"AWS4-HMAC-SHA256".equals(q.get("X-Amz-Algorithm"))) throw new Exception("algorithm");
        if (!"host".equals(q.get("X-Amz-SignedHeaders"))) throw new Exception("signed headers");
        if (!"900".equals(q.get("X-Amz-Expires"))) throw new Exception("expires " + q.get("X-Amz-Expires"));
        if (sessionToken != null && !sessionToken.equals(q.get("X-Amz-Security-Token"))) throw new Exception("session token");
        String date = q.get("X-Amz-Date");
        Instant signed = DateTimeFormatter.ofPattern("yyyyMMdd'T'HHmmss'Z'").withZone(ZoneOffset.UTC)
                .parse(date, Instant::from);
        Instant now = Instant.now();
        if (now.isAfter(signed.plusSeconds(900)) || signed.isAfter(now.plusSeconds(300))) {
            throw new Exception("expired or from the future: " + date);
        }
        String day = date.substring(0, 8);
        String scope = day + "/" + region + "/kafka-cluster/aws4_request";
        if (!(accessKey + "/" + scope).equals(q.get("X-Amz-Credential"))) throw new Exception("credential " + q.get("X-Amz-Credential"));
        List<String> pairs = new ArrayList<>();
        for (Map.Entry<String, String> e : q.entrySet()) {
            if (e.getKey().equals("X-Amz-Signature") || e.getKey().equals("User-Agent")) continue;
            pairs.add(enc(e.getKey()) + "=" + enc(e.getValue()));
        }
        Collections.sort(pairs);
        String canonical = "GET\n/\n" + String.join("&", pairs) + "\nhost:" + host + "\n\nhost\n" + sha256("");
        String toSign = "AWS4-HMAC-SHA256\n" + date + "\n" + scope + "\n" + sha256(canonical);
        byte[] k = hmac(("AWS4" + secretKey).getBytes(StandardCharsets.UTF_8), day);
        k = hmac(k, region);
        k = hmac(k, "kafka-cluster");
        k = hmac(k, "aws4_request");
        if (!hex(hmac(k, toSign)).equals(q.get("X-Amz-Signature"))) throw new Exception("signature does not match");
        final long start = signed.toEpochMilli();
        final String value = token;
        return new OAuthBearerToken() {
            public String value() { return value; }
            public Set<String> scope() { return Collections.emptySet(); }
            public long lifetimeMs() { return start + 900_000L; }
            public String principalName() { return accessKey; }
            public Long startTimeMs() { return start; }
        };
    }
}
