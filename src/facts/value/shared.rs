//! A list as an expression value: converted one level at a time when first read, and shared
//! by every copy the interpreter makes (a copy is a reference count).

use super::*;

/// A list's items as an expression value, built on its first read.
pub fn list(items: &dyn ItemsOf) -> Box<dyn Val + '_> {
    Box::new(Shared(Arc::new(LazyList { items, converted: OnceLock::new() })))
}

/// A list and, once read, its expression value: one level, whose lists and maps are
/// themselves built when read.
#[derive(Debug)]
struct LazyList<'v> {
    items: &'v dyn ItemsOf,
    converted: OnceLock<CelList<'v>>,
}

impl<'v> LazyList<'v> {
    fn value(&self) -> &CelList<'v> {
        self.converted.get_or_init(|| CelList::from(self.items.items()))
    }
}

/// A list that every copy shares: a copy is a reference count. It is the value it holds to
/// the interpreter (its type, operators and built-in identity are the inner value's), so
/// functions that take a `list` take it. Only a consumer that takes the value by ownership
/// (an owned result indexed or converted) copies the one level it takes; the elements stay
/// shared.
#[derive(Debug)]
struct Shared<'v>(Arc<LazyList<'v>>);

impl<'s> Val for Shared<'s> {
    fn get_type(&self) -> &Type {
        self.0.value().get_type()
    }

    fn cel_type() -> &'static Type {
        // a list, per value: no overload is declared for this type
        &cel::common::types::DYN_TYPE
    }

    fn as_adder<'b, 'v>(&'b self) -> Option<&'b (dyn Adder + 'v)>
    where
        Self: 'v,
    {
        self.0.value().as_adder()
    }

    fn as_comparer(&self) -> Option<&dyn Comparer> {
        self.0.value().as_comparer()
    }

    fn as_container(&self) -> Option<&dyn Container> {
        self.0.value().as_container()
    }

    fn as_indexer<'b, 'v>(&'b self) -> Option<&'b (dyn Indexer + 'v)>
    where
        Self: 'v,
    {
        self.0.value().as_indexer()
    }

    fn into_indexer<'v>(self: Box<Self>) -> Option<Box<dyn Indexer + 'v>>
    where
        Self: 'v,
    {
        Some(self as Box<dyn Indexer + 'v>)
    }

    fn as_iterable<'b, 'v>(&'b self) -> Option<&'b (dyn Iterable + 'v)>
    where
        Self: 'v,
    {
        self.0.value().as_iterable()
    }

    fn as_sizer(&self) -> Option<&dyn Sizer> {
        self.0.value().as_sizer()
    }

    fn as_zeroer(&self) -> Option<&dyn Zeroer> {
        self.0.value().as_zeroer()
    }

    fn equals(&self, other: &dyn Val) -> bool {
        self.0.value().equals(other)
    }

    fn clone_as_boxed<'v>(&self) -> Box<dyn Val + 'v>
    where
        Self: 'v,
    {
        Box::new(Shared(Arc::clone(&self.0)))
    }

    fn as_builtin<'b, 'v>(&'b self) -> BuiltinRef<'b, 'v>
    where
        Self: 'v,
    {
        self.0.value().as_builtin()
    }

    fn into_builtin<'v>(self: Box<Self>) -> Option<Builtin<'v>>
    where
        Self: 'v,
    {
        // the interpreter takes a built-in by value only where it may consume it: one copy
        // of this level (its elements are shared)
        self.0.value().clone_as_boxed().into_builtin()
    }
}

impl Indexer for Shared<'_> {
    fn get<'b, 'v>(&'b self, idx: &dyn Val) -> Result<CowVal<'b, 'v>, ExecutionError>
    where
        Self: 'v,
    {
        self.0.value().get(idx)
    }

    fn steal<'v>(self: Box<Self>, idx: &dyn Val) -> Result<Box<dyn Val + 'v>, ExecutionError>
    where
        Self: 'v,
    {
        self.get(idx).map(CowVal::into_owned)
    }
}
