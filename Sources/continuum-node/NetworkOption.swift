import ArgumentParser
import ContinuumWire
import Foundation

extension RunCommand {
    /// The network to join, from --network or --network-key; read before anything is opened or stored.
    func networkID() throws -> NetworkID {
        if let network { return .named(network) }
        guard let networkKey else { return .default }
        var isDirectory: ObjCBool = false
        if FileManager.default.fileExists(atPath: networkKey, isDirectory: &isDirectory), isDirectory.boolValue {
            throw CLIError("cannot read --network-key '\(networkKey)': it is a directory; give the key file")
        }
        guard let handle = FileHandle(forReadingAtPath: networkKey) else {
            let reason = FileManager.default.fileExists(atPath: networkKey) ? "permission denied" : "no such file"
            throw CLIError("cannot read --network-key '\(networkKey)': \(reason)")
        }
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
}
