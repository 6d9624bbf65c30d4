import ArgumentParser
import ContinuumWire
import Foundation

extension RunCommand {
    /// The network to join, from --network or --network-key; read before anything is opened or stored.
    func networkID() throws -> NetworkID {
        try NetworkChoice.id(network: network, key: networkKey) ?? .default
    }
}

/// `--network NAME` and `--network-key FILE`: a network group (no founder, no admin) that every node given the same
/// name or key is in.
enum NetworkChoice {
    /// The network id of the options, or nil when neither is given; the key file is read now.
    static func id(network: String?, key networkKey: String?) throws -> NetworkID? {
        if let network { return .named(network) }
        guard let networkKey else { return nil }
        var isDirectory: ObjCBool = false
        if FileManager.default.fileExists(atPath: networkKey, isDirectory: &isDirectory), isDirectory.boolValue {
            throw CLIError("cannot read --network-key '\(networkKey)': it is a directory; give the key file")
        }
        guard let handle = FileHandle(forReadingAtPath: networkKey) else {
            let reason = FileManager.default.fileExists(atPath: networkKey) ? "permission denied" : "no such file"
            throw CLIError("cannot read --network-key '\(networkKey)': \(reason)")
        }
        // Only read from: closing cannot lose anything.
        defer { try? handle.close() }
        let bytes: Data
        do {
            bytes = try handle.read(upToCount: NetworkID.maxKeyBytes + 1) ?? Data()
        } catch {
            throw CLIError("cannot read --network-key '\(networkKey)': \(error.localizedDescription)")
        }
        guard bytes.count <= NetworkID.maxKeyBytes else {
            throw CLIError("--network-key '\(networkKey)' is over 64 KiB; a key is a few dozen bytes")
        }
        guard let id = NetworkID.key(bytes) else {
            throw CLIError(
                "--network-key '\(networkKey)' is empty; put a key in it, e.g. 'head -c 32 /dev/urandom > \(networkKey)'"
            )
        }
        return id
    }

    /// The name a network group is shown with.
    static func label(network: String?, id: NetworkID) -> String { network ?? "network \(id.short)" }
}
