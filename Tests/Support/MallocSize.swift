#if canImport(Glibc)
import Glibc
#endif

/// The bytes malloc reserved for `object` (its chunk less glibc's 8 bytes of header): what a footprint test
/// compares with a size class. glibc's `malloc_usable_size` is in <malloc.h>, which Swift's Glibc module
/// leaves out, so it is looked up by name.
public func mallocUsableSize(of object: AnyObject) -> Int {
    typealias UsableSize = @convention(c) (UnsafeMutableRawPointer?) -> Int
    guard let symbol = dlsym(UnsafeMutableRawPointer(bitPattern: 0), "malloc_usable_size") else { return -1 }
    let usableSize = unsafeBitCast(symbol, to: UsableSize.self)
    return withExtendedLifetime(object) { usableSize(Unmanaged.passUnretained(object).toOpaque()) }
}
