import Foundation

/// The text form that search compares: lower case, with diacritics removed ("Café" → "cafe").
public enum TextFolding {
    /// Decomposes (NFD), drops combining marks, and lowercases. Deterministic on every platform.
    public static func fold(_ text: String) -> String {
        var scalars = String.UnicodeScalarView()
        for scalar in text.decomposedStringWithCanonicalMapping.unicodeScalars {
            switch scalar.properties.generalCategory {
            case .nonspacingMark, .enclosingMark, .spacingMark: continue
            default: scalars.append(scalar)
            }
        }
        return String(scalars).lowercased()
    }
}
