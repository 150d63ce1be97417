/**
 * The part of React 18's API the web app uses, typed for the compiler.
 * The repository has React but not @types/react; once @types/react (18.x)
 * and @types/react-dom are installed this file must go (the two would
 * declare the same modules).
 */
declare module 'react' {
  export type Key = string | number;
  export interface ReactElement {
    type: unknown;
    props: unknown;
    key: Key | null;
  }
  export type ReactNode = ReactElement | string | number | bigint | boolean | null | undefined | Iterable<ReactNode>;

  export interface MutableRefObject<T> {
    current: T;
  }
  export interface RefObject<T> {
    readonly current: T | null;
  }
  export type RefCallback<T> = (instance: T | null) => void;
  export type Ref<T> = RefCallback<T> | RefObject<T> | null;

  export type Dispatch<A> = (value: A) => void;
  export type SetStateAction<S> = S | ((prev: S) => S);
  export type DependencyList = readonly unknown[];
  export type EffectCallback = () => void | (() => void);

  export function useState<S>(initial: S | (() => S)): [S, Dispatch<SetStateAction<S>>];
  export function useState<S = undefined>(): [S | undefined, Dispatch<SetStateAction<S | undefined>>];
  export function useEffect(effect: EffectCallback, deps?: DependencyList): void;
  export function useLayoutEffect(effect: EffectCallback, deps?: DependencyList): void;
  export function useRef<T>(initial: T): MutableRefObject<T>;
  export function useRef<T>(initial: T | null): RefObject<T>;
  export function useRef<T = undefined>(): MutableRefObject<T | undefined>;
  export function useCallback<T extends (...args: never[]) => unknown>(callback: T, deps: DependencyList): T;
  export function useMemo<T>(factory: () => T, deps: DependencyList): T;
  export function useId(): string;

  export interface Context<T> {
    Provider: (props: { value: T; children?: ReactNode }) => ReactNode;
  }
  export function createContext<T>(defaultValue: T): Context<T>;
  export function useContext<T>(context: Context<T>): T;

  export const Fragment: (props: { children?: ReactNode }) => ReactNode;
  export const StrictMode: (props: { children?: ReactNode }) => ReactNode;

  export interface CSSProperties {
    [property: string]: string | number | undefined;
  }

  export interface SyntheticEvent<T = Element, E = Event> {
    currentTarget: T;
    target: EventTarget;
    nativeEvent: E;
    defaultPrevented: boolean;
    preventDefault(): void;
    stopPropagation(): void;
  }
  export interface ChangeEvent<T = Element> extends SyntheticEvent<T> {
    target: EventTarget & T;
  }
  export type FormEvent<T = Element> = SyntheticEvent<T>;
  export type FocusEvent<T = Element> = SyntheticEvent<T, globalThis.FocusEvent>;
  export type UIEvent<T = Element> = SyntheticEvent<T, globalThis.UIEvent>;
  export interface KeyboardEvent<T = Element> extends SyntheticEvent<T, globalThis.KeyboardEvent> {
    key: string;
    altKey: boolean;
    ctrlKey: boolean;
    metaKey: boolean;
    shiftKey: boolean;
  }
  export interface MouseEvent<T = Element> extends SyntheticEvent<T, globalThis.MouseEvent> {
    button: number;
    altKey: boolean;
    ctrlKey: boolean;
    metaKey: boolean;
    shiftKey: boolean;
  }
  export interface DragEvent<T = Element> extends MouseEvent<T> {
    dataTransfer: DataTransfer;
  }

  type AriaAttributes = { [name: `aria-${string}`]: string | number | boolean | undefined };
  type DataAttributes = { [name: `data-${string}`]: string | number | undefined };

  /** The attributes of the HTML elements the app renders (methods, so handlers stay bivariant). */
  export interface HTMLAttributes<T> extends AriaAttributes, DataAttributes {
    children?: ReactNode;
    key?: Key | null;
    ref?: Ref<T>;
    id?: string;
    className?: string;
    style?: CSSProperties;
    title?: string;
    role?: string;
    tabIndex?: number;
    hidden?: boolean;
    lang?: string;
    dir?: string;
    translate?: 'yes' | 'no';
    // a, img, link
    href?: string;
    target?: string;
    rel?: string;
    download?: string | boolean;
    src?: string;
    alt?: string;
    width?: number | string;
    height?: number | string;
    loading?: 'lazy' | 'eager';
    decoding?: 'async' | 'sync' | 'auto';
    // forms
    type?: string;
    name?: string;
    value?: string | number | readonly string[];
    defaultValue?: string | number | readonly string[];
    checked?: boolean;
    defaultChecked?: boolean;
    disabled?: boolean;
    placeholder?: string;
    required?: boolean;
    autoComplete?: string;
    autoFocus?: boolean;
    autoCapitalize?: string;
    readOnly?: boolean;
    multiple?: boolean;
    accept?: string;
    min?: number | string;
    max?: number | string;
    step?: number | string;
    maxLength?: number;
    pattern?: string;
    inputMode?: string;
    spellCheck?: boolean;
    htmlFor?: string;
    form?: string;
    noValidate?: boolean;
    rows?: number;
    cols?: number;
    wrap?: string;
    // tables, time, details, progress
    colSpan?: number;
    rowSpan?: number;
    scope?: string;
    dateTime?: string;
    open?: boolean;
    // dialog-ish and misc
    onClick?(event: MouseEvent<T>): void;
    onChange?(event: ChangeEvent<T>): void;
    onInput?(event: FormEvent<T>): void;
    onSubmit?(event: FormEvent<T>): void;
    onKeyDown?(event: KeyboardEvent<T>): void;
    onFocus?(event: FocusEvent<T>): void;
    onBlur?(event: FocusEvent<T>): void;
    onScroll?(event: UIEvent<T>): void;
    onToggle?(event: SyntheticEvent<T>): void;
    onLoad?(event: SyntheticEvent<T>): void;
    onError?(event: SyntheticEvent<T>): void;
    onDragOver?(event: DragEvent<T>): void;
    onDragEnter?(event: DragEvent<T>): void;
    onDragLeave?(event: DragEvent<T>): void;
    onDrop?(event: DragEvent<T>): void;
  }

  export interface SVGAttributes extends AriaAttributes {
    children?: ReactNode;
    key?: Key | null;
    className?: string;
    role?: string;
    focusable?: string;
    viewBox?: string;
    width?: number | string;
    height?: number | string;
    fill?: string;
    stroke?: string;
    strokeWidth?: number | string;
    strokeLinecap?: string;
    strokeLinejoin?: string;
    d?: string;
    cx?: number | string;
    cy?: number | string;
    r?: number | string;
    x?: number | string;
    y?: number | string;
    points?: string;
  }
}

declare module 'react/jsx-runtime' {
  import type { HTMLAttributes, Key, ReactElement, ReactNode, SVGAttributes } from 'react';
  export const Fragment: (props: { children?: ReactNode }) => ReactNode;
  export function jsx(type: unknown, props: unknown, key?: Key): ReactElement;
  export function jsxs(type: unknown, props: unknown, key?: Key): ReactElement;

  export namespace JSX {
    type Element = ReactElement;
    type ElementType = string | ((props: any) => ReactNode);
    interface ElementChildrenAttribute {
      children: {};
    }
    interface IntrinsicAttributes {
      key?: Key | null;
    }
    interface IntrinsicElements {
      a: HTMLAttributes<HTMLAnchorElement>;
      article: HTMLAttributes<HTMLElement>;
      aside: HTMLAttributes<HTMLElement>;
      b: HTMLAttributes<HTMLElement>;
      br: HTMLAttributes<HTMLBRElement>;
      button: HTMLAttributes<HTMLButtonElement>;
      code: HTMLAttributes<HTMLElement>;
      dd: HTMLAttributes<HTMLElement>;
      details: HTMLAttributes<HTMLDetailsElement>;
      div: HTMLAttributes<HTMLDivElement>;
      dl: HTMLAttributes<HTMLDListElement>;
      dt: HTMLAttributes<HTMLElement>;
      em: HTMLAttributes<HTMLElement>;
      fieldset: HTMLAttributes<HTMLFieldSetElement>;
      footer: HTMLAttributes<HTMLElement>;
      form: HTMLAttributes<HTMLFormElement>;
      h1: HTMLAttributes<HTMLHeadingElement>;
      h2: HTMLAttributes<HTMLHeadingElement>;
      h3: HTMLAttributes<HTMLHeadingElement>;
      header: HTMLAttributes<HTMLElement>;
      hr: HTMLAttributes<HTMLHRElement>;
      img: HTMLAttributes<HTMLImageElement>;
      input: HTMLAttributes<HTMLInputElement>;
      label: HTMLAttributes<HTMLLabelElement>;
      legend: HTMLAttributes<HTMLLegendElement>;
      li: HTMLAttributes<HTMLLIElement>;
      main: HTMLAttributes<HTMLElement>;
      nav: HTMLAttributes<HTMLElement>;
      ol: HTMLAttributes<HTMLOListElement>;
      option: HTMLAttributes<HTMLOptionElement>;
      p: HTMLAttributes<HTMLParagraphElement>;
      pre: HTMLAttributes<HTMLPreElement>;
      progress: HTMLAttributes<HTMLProgressElement>;
      section: HTMLAttributes<HTMLElement>;
      select: HTMLAttributes<HTMLSelectElement>;
      small: HTMLAttributes<HTMLElement>;
      span: HTMLAttributes<HTMLSpanElement>;
      strong: HTMLAttributes<HTMLElement>;
      summary: HTMLAttributes<HTMLElement>;
      table: HTMLAttributes<HTMLTableElement>;
      tbody: HTMLAttributes<HTMLTableSectionElement>;
      td: HTMLAttributes<HTMLTableCellElement>;
      textarea: HTMLAttributes<HTMLTextAreaElement>;
      th: HTMLAttributes<HTMLTableCellElement>;
      thead: HTMLAttributes<HTMLTableSectionElement>;
      time: HTMLAttributes<HTMLTimeElement>;
      tr: HTMLAttributes<HTMLTableRowElement>;
      ul: HTMLAttributes<HTMLUListElement>;
      svg: SVGAttributes;
      path: SVGAttributes;
      circle: SVGAttributes;
      polyline: SVGAttributes;
    }
  }
}

declare module 'react-dom/client' {
  import type { ReactNode } from 'react';
  export interface Root {
    render(children: ReactNode): void;
    unmount(): void;
  }
  export function createRoot(container: Element | DocumentFragment): Root;
}
