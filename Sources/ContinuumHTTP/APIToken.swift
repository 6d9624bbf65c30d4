import Crypto
import Foundation

/// The API's access token when `run` listens beyond loopback without `--api-token`: made once, 32 URL-safe
/// characters from the system's random generator, and kept in the data directory (`api.token`, mode 0600), so that
/// the address a phone saved stays good across restarts.
public enum APIToken {
    public static func loadOrCreate(in directory: URL) throws -> String {
        let url = directory.appendingPathComponent("api.token")
        if FileManager.default.fileExists(atPath: url.path) {
            // A kept token that cannot be read, or that others may read, is an error, not replaced in silence: a
            // phone's saved address holds it.
            try requirePrivate(url)
            let token = try String(contentsOf: url, encoding: .utf8).trimmingCharacters(in: .whitespacesAndNewlines)
            // A kept token obeys the rule of --api-token (it goes in a cookie); a broken one is made anew.
            let allowed = Set("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-._~+/=")
            if token.count >= 16 && token.allSatisfy(allowed.contains) { return token }
        }
        let alphabet = Array("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_")
        // 64 symbols: each random byte's low 6 bits pick one, without bias.
        let bytes = SymmetricKey(size: .bits256).withUnsafeBytes { Array($0) }
        let token = String(bytes.map { alphabet[Int($0 & 63)] })
        try writePrivate(Data((token + "\n").utf8), to: url)
        return token
    }
}
